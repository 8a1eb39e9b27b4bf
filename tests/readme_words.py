"""The flag words README's glossary lists (its `flag words` entry): every flag of every command and benchmark script is
made of them."""

import re
from pathlib import Path

README = Path(__file__).parents[1] / "README.md"


def flag_words() -> set[str]:
    entry = README.read_text(encoding="utf-8").split("- **flag words**:")[1].split("\n- **")[0].split("\n## ")[0]
    return set(re.findall(r"`([a-z0-9]+)`", entry))


def words_outside(flag: str, words: set[str]) -> list[str]:
    """The words of `flag` (`--max-test-pairs-per-topic`) that `words` lacks."""
    return [word for word in flag.removeprefix("--").split("-") if word not in words]

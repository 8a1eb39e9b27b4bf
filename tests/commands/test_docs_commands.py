"""Every `prefcraft ...` command line that the README and the docs show parses with the real parser: commands, steps,
flags and their values exist as written. A usage synopsis is read as one command line: each `[...]` as its first
alternative, `a|b` as `a`, `<name>` and an upper-case placeholder (FILE, K) as a value, `...` after a flag as a value
and elsewhere as flags left out. A command named in prose (inline code), or with flags left out, may lack its required
flags; a whole command line of a code block may not. No model calls."""

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from prefcraft.commands.main import make_parser

ROOT = Path(__file__).parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "experiments" / "README.md"]
FENCED = re.compile(r"^```([\w-]*)\n(.*?)^```", re.S | re.M)  # every block, so that fences pair up
SHELL = {"", "bash", "sh", "console"}
COMMAND_LINE = re.compile(r"^(?:\$ )?(?:[A-Z_]+=\S+ )*(?:\.venv/bin/)?prefcraft (.+)$")
INLINE = re.compile(r"`(?:\.venv/bin/)?prefcraft ([^`]+)`")
OPTIONAL = re.compile(r"\[([^\[\]]*)\]")
PLACEHOLDER = re.compile(r"<[^<>]+>")


def command_lines(path: Path) -> list[tuple[str, bool]]:
    """(the line after `prefcraft`, whether it is a command line of a code block) for each command `path` shows."""
    text = path.read_text(encoding="utf-8")
    found = []
    for language, block in FENCED.findall(text):
        if language not in SHELL:
            continue
        for line in block.replace("\\\n", " ").splitlines():
            if match := COMMAND_LINE.match(line.strip()):
                found.append((match.group(1), True))
    prose = FENCED.sub("", text)
    found += [(match, False) for match in INLINE.findall(prose.replace("\n", " "))]
    return found


def as_argv(line: str) -> tuple[list[str], bool] | None:
    """The synopsis as arguments, and whether it leaves flags out (see the module); None for a generic one
    (`prefcraft <component> <step>`)."""
    line = re.split(r"\s+#\s|\s+\|\s(?![^\[]*\])|\s+&&\s|\s+>\s|\s+&(?=\s|$)", line)[0]  # a comment, a pipe, a chain,
    # a redirect, a command sent to the background
    line = OPTIONAL.sub(lambda match: re.split(r"\s*\|\s*", match.group(1))[0], line)
    argv, elided = [], False
    for token in shlex.split(line):
        if token == "..." and not (argv and argv[-1].startswith("--")):
            elided = True
            continue
        if len(argv) < 2 and PLACEHOLDER.fullmatch(token):
            return None
        token = PLACEHOLDER.sub("x", token.split("|")[0] if not token.startswith("--") or "=" not in token else token)
        argv.append("1" if re.fullmatch(r"[A-Z][A-Z_]*", token) or token == "..." else token)
    return argv, elided


CASES = [(path.relative_to(ROOT).as_posix(), line, block) for path in DOCS for line, block in command_lines(path)]


def test_the_docs_show_command_lines():
    assert len(CASES) > 60
    assert {path for path, _, _ in CASES} >= {"README.md", "docs/synthesizeme.md", "docs/cupid.md"}


@pytest.mark.parametrize(("path", "line", "block"), CASES, ids=[f"{path}: {line[:60]}" for path, line, _ in CASES])
def test_a_command_line_in_the_docs_parses(path, line, block):
    parsed = as_argv(line)
    if parsed is None:
        return
    argv, elided = parsed
    errors = io.StringIO()
    with contextlib.suppress(SystemExit), contextlib.redirect_stderr(errors), \
            contextlib.redirect_stdout(io.StringIO()):
        make_parser().parse_args(argv)
    message = errors.getvalue().strip().splitlines()[-1] if errors.getvalue().strip() else ""
    if message and not ((elided or not block) and "the following arguments are required" in message):
        pytest.fail(f"{path}: `prefcraft {line}` does not parse: {message}")

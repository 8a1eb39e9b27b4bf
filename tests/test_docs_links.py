"""The README and docs/ point only at what exists: every relative link names a file of the repository, every
`#anchor` into a Markdown file names one of its headings (GitHub's slugs), and the README stays a first read."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 300

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, where a link is a link."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def heading_slugs(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens, repeats -1."""
    slugs, seen = set(), {}
    for line in _prose_lines(text):
        match = HEADING.match(line)
        if not match:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(1)).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        slugs.add(slug if count == 0 else f"{slug}-{count}")
    return slugs


def broken_links(page: Path) -> list[str]:
    """Each relative link of `page` whose file or heading is missing, as `target (why)`."""
    broken = []
    for line in _prose_lines(page.read_text(encoding="utf-8")):
        for target in LINK.findall(line):
            if EXTERNAL.match(target):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in heading_slugs(linked.read_text(encoding="utf-8")):
                broken.append(f"{target} (no such heading)")
    return broken


PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    assert broken_links(page) == []


def test_the_readme_is_a_first_read():
    """Up to its glossary, a reference the help texts point into (tests/commands/test_help_text.py)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.split("\n## Glossary\n")[0].splitlines()) <= README_MAX_LINES


def test_the_checker_finds_a_missing_file_and_a_missing_heading(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## The `engine`, and calls\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n"
        "[fine](other.md#the-engine-and-calls) [self](#title) [web](https://example.com/none.md)\n"
        "[gone](missing.md) [wrong heading](other.md#nowhere) [self wrong](#untitled)\n"
        "```\n[in code](not-checked.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(page) == [
        "missing.md (no such file)",
        "other.md#nowhere (no such heading)",
        "#untitled (no such heading)",
    ]


def test_repeated_headings_get_numbered_anchors():
    assert heading_slugs("# Cost\n## Cost\n## Cost\n## What it printed: 95% CI\n") == {
        "cost",
        "cost-1",
        "cost-2",
        "what-it-printed-95-ci",
    }

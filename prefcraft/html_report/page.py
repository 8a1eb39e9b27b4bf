"""The report's HTML: one file, figures inline as base64 PNG, every text from the store escaped."""

from __future__ import annotations

import base64
import re
from datetime import datetime
from html import escape

from prefcraft.html_report.collect import Store
from prefcraft.report_parts.blocks import Details, Link, Plot, Section, Table

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
.meta, .missing, figcaption { color: #555; } .missing { font-style: italic; }
table { border-collapse: collapse; margin: .8em 0; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .25em .5em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } caption { text-align: left; font-weight: bold; padding: .3em 0; }
tr.failed td { background: #fde8e8; }
tr.failed td.status { color: #b00; font-weight: bold; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
details { margin: .3em 0; } details.failed > summary { color: #b00; font-weight: bold; }
nav a { margin-right: 1em; }
"""


def render(store: Store, sections: list[Section]) -> str:
    generated = datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
    runs = sum(1 for _ in store.command_runs())
    parts = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f"<title>prefcraft report: {escape(store.experiment)}</title>", f"<style>{STYLE}</style>", "</head>", "<body>",
        f"<h1>prefcraft report: experiment {escape(store.experiment)}</h1>",
        f'<p class="meta">{runs} command runs from <code>{escape(store.uri)}</code>, generated {generated}.</p>',
        "<nav>" + "".join(f'<a href="#{_anchor(s.title)}">{escape(s.title)}</a>' for s in sections) + "</nav>",
    ]
    for section in sections:
        parts += [f'<section id="{_anchor(section.title)}">', f"<h2>{escape(section.title)}</h2>"]
        if not section.blocks:
            parts.append(f'<p class="missing">{escape(section.missing)}</p>')
        else:
            if section.intro:
                parts.append(f"<p>{escape(section.intro)}</p>")
            parts += [_block(block) for block in section.blocks]
        parts.append("</section>")
    parts += ["</body>", "</html>"]
    return "\n".join(parts) + "\n"


def _block(block: Plot | Table | Details) -> str:
    if isinstance(block, Plot):
        data = base64.b64encode(block.png).decode("ascii")
        caption = f"<b>{escape(block.title)}</b>" + (f". {escape(block.caption)}" if block.caption else "")
        return (f'<figure><img src="data:image/png;base64,{data}" alt="{escape(block.title)}">'
                f"<figcaption>{caption}</figcaption></figure>")
    if isinstance(block, Table):
        status = block.header.index("status") if "status" in block.header else -1
        head = "".join(f"<th>{escape(cell)}</th>" for cell in block.header)
        rows = []
        for number, row in enumerate(block.rows):
            cells = "".join(f'<td{" class=status" if index == status else ""}>{_cell(cell)}</td>'
                            for index, cell in enumerate(row))
            rows.append(f'<tr{" class=failed" if number in block.failed else ""}>{cells}</tr>')
        caption = f"<caption>{escape(block.title)}</caption>" if block.title else ""
        return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    rows = "".join(f"<tr><td>{escape(name)}</td><td>{escape(value)}</td></tr>" for name, value in block.rows)
    opened = ' class="failed" open' if block.open else ""
    return f"<details{opened}><summary>{escape(block.summary)}</summary><table>{rows}</table></details>"


def _cell(cell: str | Link) -> str:
    if isinstance(cell, Link):
        return f'<a href="{escape(cell.href)}">{escape(cell.text)}</a>'
    return escape(cell)


def _anchor(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")

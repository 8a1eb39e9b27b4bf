"""The decoding tables of docs/fidelity.md, read and held against the experiment files they describe.

Each paper-scale experiment file has a table headed `#### Decoding: experiments/<file>.toml`, a row per model call and
setting: the reference code's value (with the file and line that set it), the value the experiment file runs with,
where that value is read from, and a status: `same` (then the two values agree) or `deviation: <name> — <reason>`.
`problems` lists every row whose value the file no longer has, every `same` that is not, and every decoding setting
the file gives that no row describes.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefcraft.experiments.files import Experiment, load_experiment, served_flag, vllm_serve_lines

HEADING = re.compile(r"^#### Decoding: (experiments/\S+\.toml)\s*$")
COLUMNS = ["call", "setting", "reference", "reference source", "prefcraft", "read from", "status"]
DEVIATION = re.compile(r"^deviation: \w+ — \S.*$")
ROLE_DECODING = ("temperature", "top_p", "max_tokens")
"""The decoding fields of a settings role: a file that sets one must have a row for it."""


@dataclass(frozen=True)
class Row:
    cells: dict[str, str]

    def __getitem__(self, column: str) -> str:
        return self.cells[column]

    def __str__(self) -> str:
        return f"{self['call']} / {self['setting']}"


def tables(markdown: str) -> dict[str, list[Row]]:
    """Each decoding table of `markdown`, keyed by the experiment file it describes (relative to the repository)."""
    found: dict[str, list[Row]] = {}
    current: list[Row] | None = None
    for line in markdown.splitlines():
        if match := HEADING.match(line):
            current = found.setdefault(match.group(1), [])
        elif current is not None and line.startswith("|"):
            cells = [cell.strip().strip("`").strip() for cell in line.strip().strip("|").split("|")]
            if cells == COLUMNS or set("".join(cells)) <= set("-: "):
                continue
            if len(cells) != len(COLUMNS):
                raise ValueError(f"decoding row with {len(cells)} cells, not {len(COLUMNS)}: {line}")
            current.append(Row(dict(zip(COLUMNS, cells, strict=True))))
        elif current is not None and current and not line.strip():
            current = None
    return found


def problems(path: Path, rows: list[Row]) -> list[str]:
    """What `rows` claim of the experiment file at `path` that is not so, and what it sets that they leave out."""
    experiment = load_experiment(path)
    serve_lines = vllm_serve_lines(path.read_text(encoding="utf-8"))
    found = []
    for row in rows:
        location = row["read from"]
        if location != "-":
            try:
                actual = normalized(read(location, experiment, serve_lines))
            except LookupError as error:
                found.append(f"{row}: {location}: {error}")
                continue
            if actual != normalized(row["prefcraft"]):
                found.append(f"{row}: the table says {row['prefcraft']}, {location} is {actual}")
        status = row["status"]
        if status == "same":
            if location != "-" and normalized(row["prefcraft"]) != normalized(row["reference"]):
                found.append(f"{row}: 'same', but {row['prefcraft']} is not the reference's {row['reference']}")
        elif not DEVIATION.match(status):
            found.append(f"{row}: status {status!r} is neither 'same' nor 'deviation: <name> — <reason>'")
        if not re.search(r"\S+/\S+ \S+:\d+", row["reference source"]) and row["reference"] != "unset":
            found.append(f"{row}: the reference source is not 'owner/repo path:line'")
    described = {row["read from"] for row in rows}
    given = experiment.settings.model_dump(exclude_unset=True)
    for role in ("task", "prompt", "judge"):
        for name in ROLE_DECODING:
            if name in given.get(role, {}) and f"settings.{role}.{name}" not in described:
                found.append(f"settings.{role}.{name} is set in the file and no row describes it")
    context_given = any(location.startswith("serve") and "--max-model-len" in location for location in described)
    if serve_lines and not context_given:
        found.append("the file serves a model and no row gives its context length (serve --max-model-len)")
    return found


def read(location: str, experiment: Experiment, serve_lines: list[str]) -> Any:
    """The value at `location`: `settings.<role>.<field>`, `steps.<step>.<option>`, `serve [<model>] <flag>` or
    `code <module>:<NAME>`."""
    kind, _, rest = location.partition(" ")
    if kind == "code":
        module, _, name = rest.partition(":")
        return getattr(importlib.import_module(module), name)
    if kind == "serve":
        *model, flag = rest.split()
        return served_flag(serve_lines, flag, *model)
    head, _, tail = location.partition(".")
    if head == "settings":
        role, _, field = tail.partition(".")
        return getattr(experiment.settings.model_for(role), field)
    if head == "steps":
        step, _, option = tail.partition(".")
        (options,) = [command.options for command in experiment.commands() if command.name == step] or [None]
        if options is None:
            raise LookupError(f"the file has no step {step}")
        return getattr(options, option)
    raise LookupError("not settings.<role>.<field>, steps.<step>.<option>, serve <flag> or code <module>:<NAME>")


def normalized(value: Any) -> Any:
    """A value as a table cell gives it: None is `unset`, booleans `on`/`off`, numbers compared as numbers."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "on" if value else "off"
    text = str(value).strip()
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return text

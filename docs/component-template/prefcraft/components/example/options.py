"""The template component's step options: one typed model per step. Its fields are the step's flags (`requests` is
`--requests`), experiment-file keys and `prefcraft.run` arguments; its work reads it directly."""

from __future__ import annotations

from pathlib import Path

from prefcraft.options import FilePath, OneOrMore, Options, option


class EvaluateOptions(Options):
    requests: OneOrMore[str] = option(["What is DSPy?", "Name a prime number."], "the requests to answer")
    output_dir: FilePath = option(Path("runs/example"), "where the answers are written (one JSONL file)")

"""Writing the TOML files (experiments, sweeps, settings) that a test then loads."""

from pathlib import Path


def write(tmp_path: Path, text: str, name: str = "x.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path

"""Writing result files so that a crash never leaves a half-written one: a temporary file beside it, then a rename."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str) -> Path:
    """Replace `path` with `text` in one step: readers see the old file or the new one, never a part of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.",
                                     suffix=".tmp", delete=False) as scratch:
        scratch.write(text)
    try:
        # The temporary file is private (0600); the result gets the mode any new file of the user would get.
        os.chmod(scratch.name, _new_file_mode())
        os.replace(scratch.name, path)
    except BaseException:
        os.unlink(scratch.name)
        raise
    return path


def _new_file_mode() -> int:
    umask = os.umask(0)  # reading the umask means setting it: put it straight back
    os.umask(umask)
    return 0o666 & ~umask


def write_jsonl_atomic(path: Path, rows: Iterable[Any]) -> Path:
    """`rows` (JSON-serializable) as JSON Lines, written atomically."""
    return write_text_atomic(path, "".join(json.dumps(row, ensure_ascii=False, default=str) + "\n" for row in rows))

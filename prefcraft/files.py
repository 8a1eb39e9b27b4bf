"""Writing result files so that a crash never leaves a half-written one: a temporary file beside it, then a rename.
And naming a file after an id read from data (`safe_name`, `path_in`) so that no id can put it outside its directory."""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

MAX_NAME_CHARS = 120
"""Longest name `safe_name` returns: room for a suffix and the `.<name>.<random>.tmp` scratch file within the 255
bytes most file systems allow a name."""
DIGEST_CHARS = 16
_SAFE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
_UNSAFE_CHAR = re.compile(r"[^A-Za-z0-9._-]")


def safe_name(value: str) -> str:
    """`value` (an id read from data: a user id, a scenario id) as one file-name component inside a directory.

    An id of ASCII letters, digits, `_`, `-` and `.` that does not start with a dot and fits in MAX_NAME_CHARS is
    kept as it is (`user123.json` stays `user123.json`). Any other id (a separator, `..`, a leading dot, a NUL byte,
    other characters, too long, empty) has each other character replaced by `_`, a leading dot by `_`, is cut to fit,
    and gets `~` and a digest of the whole id appended: `~` never occurs in a kept id, so two distinct ids never share
    a name. Only the file name changes: the id itself stays as it is in metadata, metrics and results.
    """
    if len(value) <= MAX_NAME_CHARS and _SAFE.fullmatch(value):
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_CHARS]
    readable = _UNSAFE_CHAR.sub("_", value)[: MAX_NAME_CHARS - DIGEST_CHARS - 1]
    if readable.startswith(".") or not readable:
        readable = "_" + readable[1:]
    return f"{readable}~{digest}"


def path_in(directory: Path, value: str, suffix: str = "") -> Path:
    """The file `<directory>/<safe_name(value)><suffix>`: always a direct child of `directory`, whatever `value` is."""
    path = directory / f"{safe_name(value)}{suffix}"
    if path.parent != directory or path.name in {".", ".."}:  # only a suffix with a separator could do this
        raise ValueError(f"{value!r} with suffix {suffix!r} does not name a file inside {directory}")
    return path


def write_text_atomic(path: Path, text: str) -> Path:
    """Replace `path` with `text` in one step: readers see the old file or the new one, never a part of it."""
    with _replaced_on_success(path) as scratch:
        scratch.write(text)
    return path


def write_jsonl_atomic(path: Path, rows: Iterable[Any]) -> Path:
    """`rows` (JSON-serializable) as JSON Lines, written atomically."""
    with jsonl_appender(path) as append:
        append(rows)
    return path


@contextmanager
def jsonl_appender(path: Path) -> Iterator[Callable[[Iterable[Any]], None]]:
    """A function that appends rows (JSON-serializable) to `path` as JSON Lines as they come, so that none is held
    until the last is ready. They go to a scratch file that replaces `path` when the block ends, and that is removed if
    it ends with an error: `path` is never left with part of the rows."""
    with _replaced_on_success(path) as scratch:
        def append(rows: Iterable[Any]) -> None:
            for row in rows:
                scratch.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")

        yield append


@contextmanager
def _replaced_on_success(path: Path) -> Iterator[IO[str]]:
    """A scratch file beside `path` that replaces it when the block ends; on an error it is removed, with the folders
    made for it: a failed run leaves no trace of a result."""
    made = [folder for folder in (path.parent, *path.parent.parents) if not folder.exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.",
                                     suffix=".tmp", delete=False) as scratch:
        try:
            yield scratch
        except BaseException:
            scratch.close()
            os.unlink(scratch.name)
            for folder in made:  # innermost first; one that something else wrote into since stays
                with suppress(OSError):
                    folder.rmdir()
            raise
    try:
        # The temporary file is private (0600); the result gets the mode any new file of the user would get.
        os.chmod(scratch.name, _new_file_mode())
        os.replace(scratch.name, path)
    except BaseException:
        os.unlink(scratch.name)
        raise


def _new_file_mode() -> int:
    umask = os.umask(0)  # reading the umask means setting it: put it straight back
    os.umask(umask)
    return 0o666 & ~umask

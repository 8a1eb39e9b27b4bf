"""Compiled programs as JSON: DSPy's own state (`Module.save`) plus a `prefcraft` metadata block.

Files are written atomically (temporary file, then rename), so a crash never leaves a half-written program, and
loading checks the program name before touching the program (DSPy's `load_state` also trial-runs on a copy).
Programs shipped with prefcraft live in the `compiled` package, listed per program and task model in its index.json.
Wherever a file is read, an MLflow model URI (`models:/<name>@<alias>`) reads the JSON of the model a compile logged
(`prefcraft.tracking.models`). A compile saves its program whatever its verdict (`won`, `verdict` in the metadata): one
that did not beat its uncompiled start loads when asked for by path, saying so, and is never a shipped default.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

import dspy

from prefcraft import compiled
from prefcraft.errors import CompiledProgramError
from prefcraft.files import write_text_atomic
from prefcraft.tracking.models import downloaded_program, is_model_uri

logger = logging.getLogger(__name__)

METADATA_KEY = "prefcraft"
COMPILED_DIR = Path(compiled.__file__).parent
COMPILED_INDEX = COMPILED_DIR / "index.json"


def save_compiled(program: dspy.Module, path: Path, *, program_name: str, **metadata: Any) -> Path:
    """Save `program` to `path` with metadata (model, data digest, score, optimizer settings, ...)."""
    with tempfile.TemporaryDirectory() as scratch:
        state_path = Path(scratch) / "state.json"
        program.save(str(state_path))
        state = json.loads(state_path.read_text(encoding="utf-8"))
    state[METADATA_KEY] = {
        "program": program_name,
        "dspy_version": version("dspy"),
        "prefcraft_version": version("prefcraft"),
        "saved_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        **metadata,
    }
    write_text_atomic(path, json.dumps(state, indent=2, ensure_ascii=False, default=str))
    return path


def local_program(path: str | Path) -> Path:
    """`path`, or for a model URI the compiled JSON downloaded from the MLflow store."""
    return downloaded_program(path) if is_model_uri(path) else Path(path)


def read_program_json(path: Path, kind: str = "compiled program") -> Any:
    """The JSON a saved program file (or model URI) holds; a missing or unreadable file is a CompiledProgramError
    naming it as `kind`."""
    path = local_program(path)
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CompiledProgramError(f"{kind} {path} does not exist") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CompiledProgramError(f"{kind} {path} is not valid JSON ({error})") from None


def read_metadata(path: Path) -> dict[str, Any]:
    state = read_program_json(path)
    if not isinstance(state, dict) or METADATA_KEY not in state:
        raise CompiledProgramError(f"{path} has no '{METADATA_KEY}' metadata block", "was it saved by prefcraft?")
    return state[METADATA_KEY]


def load_compiled(program: dspy.Module, path: Path, *, program_name: str) -> dict[str, Any]:
    """Load state saved by `save_compiled` (a file or a model URI) into `program`; returns the metadata."""
    path = local_program(path)
    metadata = read_metadata(path)
    if metadata.get("program") != program_name:
        raise CompiledProgramError(
            f"{path} holds a compiled '{metadata.get('program')}', not a '{program_name}'",
            "point at a file compiled for this program",
        )
    try:
        program.load(str(path))
    except (KeyError, ValueError, TypeError) as error:
        raise CompiledProgramError(f"{path} does not match the {program_name} program ({error})") from None
    if lost(metadata):
        logger.warning("%s did not beat its uncompiled start (%s): loaded as asked, but it is no shipped program",
                       path, metadata.get("verdict", "no reason saved"))
    return metadata


def lost(metadata: dict[str, Any]) -> bool:
    """Whether a compile saved this program with the verdict that it did not beat its uncompiled start."""
    return metadata.get("won") is False


def shipped_compiled(program_name: str, model: str, *, warn: bool = True) -> Path | None:
    """The compiled `program_name` that prefcraft ships for task model `model`, if any (see compiled/index.json); a
    listed file that a losing compile has since been written over is none, with a warning unless `warn` is False (a
    run's params look the file up before the step's work, which warns)."""
    for entry in _read_index().get(program_name, []):
        if entry["model"] == model:
            path = COMPILED_DIR / entry["path"]
            if path.is_file() and lost(read_metadata(path)):
                if warn:
                    logger.warning("compiled/index.json lists %s as the shipped %s for %s, but a compile that did not "
                                   "beat its start has been written over it: it is not used; recompile, or restore "
                                   "the file", path, program_name, model)
                return None
            return path
    return None


def register_compiled(program_name: str, model: str, path: Path) -> bool:
    """List `path` in compiled/index.json as the shipped `program_name` for `model`, replacing any earlier entry.

    Only files inside the compiled package can be shipped; returns whether `path` was registered.
    """
    if not path.resolve().is_relative_to(COMPILED_DIR.resolve()):
        return False
    index = _read_index()
    relative = path.resolve().relative_to(COMPILED_DIR.resolve()).as_posix()
    entries = [entry for entry in index.get(program_name, []) if entry["model"] != model]
    index[program_name] = [*entries, {"model": model, "path": relative}]
    write_text_atomic(COMPILED_INDEX, json.dumps(index, indent=2) + "\n")
    return True


def _read_index() -> dict[str, list[dict[str, str]]]:
    return json.loads(COMPILED_INDEX.read_text(encoding="utf-8")) if COMPILED_INDEX.is_file() else {}

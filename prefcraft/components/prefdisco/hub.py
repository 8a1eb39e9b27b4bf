"""A PrefDisco benchmark on the Hugging Face hub as a local folder: a snapshot of its `benchmark_1k/` in the hub's
cache, downloaded on first use and read from the cache after that.

The hub dataset has no splits to pick: the whole of `benchmark_1k/` is read, and prefcraft splits its scenarios by
problem (`split_scenarios`). `benchmark_5k/` is read from a local copy only (its folder given as the source).
"""

from __future__ import annotations

import os
from pathlib import Path

from prefcraft.errors import DataError

HUB_DATASET = "stellalisy/prefq-bench"
HUB_BENCHMARK = "benchmark_1k"
OFFLINE_VALUES = {"1", "ON", "YES", "TRUE"}  # as huggingface_hub reads HF_HUB_OFFLINE


def benchmark_snapshot(name: str) -> Path:
    """The local folder of the hub dataset `name`, holding its `benchmark_1k/`. Raises DataError naming the dataset
    and saying how to give a local copy when it can neither be downloaded nor found in the cache."""
    from huggingface_hub import snapshot_download

    # huggingface_hub reads both variables once, when it is imported; read here, they count whenever they are set
    offline = os.environ.get("HF_HUB_OFFLINE", "").upper() in OFFLINE_VALUES
    try:
        snapshot = Path(snapshot_download(
            repo_id=name, repo_type="dataset", allow_patterns=[f"{HUB_BENCHMARK}/**"],
            cache_dir=os.environ.get("HF_HUB_CACHE") or None, local_files_only=offline))
    except Exception as error:  # huggingface_hub raises HTTP, connection, cache and repo-id errors alike
        first_line = str(error).partition("\n")[0]
        reason = ("HF_HUB_OFFLINE is set and the hub cache holds no complete snapshot of it" if offline
                  else f"{type(error).__name__}: {first_line}")
        raise DataError(name, None, None, f"not a local file or folder, and not readable from the Hugging Face hub "
                        f"({reason})", _local_copy_hint(name)) from None
    if not (snapshot / HUB_BENCHMARK).is_dir():
        raise DataError(name, None, None, f"the hub dataset has no {HUB_BENCHMARK}/ folder",
                        f"give {HUB_DATASET} or a dataset in its layout ({HUB_BENCHMARK}/<task>/*.jsonl)")
    return snapshot


def _local_copy_hint(name: str) -> str:
    return (f"check the name and the connection, or give a local copy: download it where the hub is reachable "
            f"(`hf download {name} --repo-type dataset --include '{HUB_BENCHMARK}/*' --local-dir DIR`; "
            f"`huggingface-cli download` with the same arguments before huggingface_hub 1.0) and pass DIR as the "
            f"data source (--data DIR, or data = \"DIR\" in an experiment file)")

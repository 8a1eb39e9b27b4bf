"""Data shipped with prefcraft."""

from importlib.resources import files
from pathlib import Path

SAMPLE_USERS = Path(str(files("prefcraft") / "data" / "sample_users" / "sample_users.jsonl"))

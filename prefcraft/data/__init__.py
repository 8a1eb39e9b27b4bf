"""Data shipped with prefcraft."""

from pathlib import Path

SAMPLE_USERS = Path(__file__).parent / "sample_users" / "sample_users.jsonl"

"""Data shipped with prefcraft."""

from pathlib import Path

SAMPLE_USERS = Path(__file__).parent / "sample_users" / "sample_users.jsonl"

# The shipped persona prompt for the embedded model was compiled on sample users 01-06; the demo fits the others.
DEMO_USERS = [f"sample_user_{number:02d}" for number in range(7, 13)]

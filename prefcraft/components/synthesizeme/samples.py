"""Data shipped with prefcraft."""

from pathlib import Path

SAMPLE_USERS = Path(__file__).parent / "sample" / "sample_users.jsonl"

# Users 01-06 are the persona-prompt compile's training and validation users; the demo fits three others, which keeps
# the main job within 15 minutes on 2 cores.
DEMO_USERS = [f"sample_user_{number:02d}" for number in range(7, 10)]

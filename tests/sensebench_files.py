"""A small SenseBench dialogue file of the real schema (new_sense_bmk.json), for SenseJudge's steps."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path


def write_dialogues(tmp_path: Path, count: int = 4, topics: Sequence[str] = ("QA",)) -> Path:
    """`count` one-turn dialogues per SenseBench topic in `topics`."""
    dialogues = [[{"from": "Human", "content": [{"type": "text", "value": f"{topic} question {i}?"}],
                   "topic": f"sense_bmk:{topic}"}] for topic in topics for i in range(count)]
    path = tmp_path / "new_sense_bmk.json"
    path.write_text(json.dumps(dialogues))
    return path

"""Write SYNTHETIC PersonalRewardBench-style preference pairs for a handful of sample users.

Each sample user has one hidden, consistent preference along one or two style dimensions (length, format, tone,
example, ordering). For every pair the chosen response satisfies that preference and the rejected one violates it;
every other dimension is drawn at random, independently for the two responses, so only the user's own dimension
separates them consistently. Responses are assembled from hand-written content about everyday topics, which
sample/synthetic_content.json holds with the sample users.

Standard library only, no LLM, no network. The same seed always produces byte-identical output:

    .venv/bin/python -m prefcraft.components.synthesizeme.generate   # seed 0 -> sample/sample_users.jsonl beside it
    .venv/bin/python -m prefcraft.components.synthesizeme.generate --seed 1 --output /tmp/other.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SAMPLE_DIR = Path(__file__).resolve().parent / "sample"
DEFAULT_OUTPUT = SAMPLE_DIR / "sample_users.jsonl"
CONTENT = SAMPLE_DIR / "synthetic_content.json"

PAIRS_PER_USER = 16
SPLIT_SIZES = (("train", 8), ("val", 4), ("test", 4))
MULTI_TURN_PER_USER = 4
ROW_TYPE = "synthetic"

# Style dimension -> its two poles.
DIMENSIONS: dict[str, tuple[str, str]] = {
    "length": ("short", "long"),
    "format": ("bullets", "prose"),
    "tone": ("formal", "casual"),
    "example": ("with_example", "no_example"),
    "order": ("answer_first", "background_first"),
}

Style = dict[str, str]


@dataclass(frozen=True)
class Topic:
    """Hand-written content for one everyday question, from which every response variant is rendered."""

    area: str
    question: str
    background: str
    core: str
    detail: tuple[str, ...]
    steps: tuple[str, str, str]
    example: str


@dataclass(frozen=True)
class User:
    """A sample user: the poles they prefer (one or two dimensions) and that rule in one sentence."""

    user_id: str
    preferences: dict[str, str]
    latent_preference: str



def load_content(path: Path) -> tuple[tuple[Topic, ...], tuple[User, ...]]:
    """The hand-written topics and the sample users, from the JSON file beside the generated sample."""
    content = json.loads(path.read_text(encoding="utf-8"))
    topics = tuple(Topic(**topic | {"detail": tuple(topic["detail"]), "steps": tuple(topic["steps"])})
                   for topic in content["topics"])
    return topics, tuple(User(**user) for user in content["users"])


TOPICS, USERS = load_content(CONTENT)

CASUAL_OPENERS = (
    "Good question!",
    "Oh, happy to help with this!",
    "Sure thing!",
    "Ooh, I love this one!",
    "Great question, let's sort it out!",
)
CASUAL_CLOSERS = ("Hope that helps!", "You've got this!", "Have fun with it!", "Good luck, you'll do great!")
FORMAL_OPENERS = ("Certainly.", "Of course.", "")
STEP_CONNECTORS = {"formal": ("First, ", "Next, ", "Finally, "), "casual": ("First, ", "Then ", "And finally, ")}
# (first user turn, assistant reply) for multi-turn conversations; the user's question follows.
CONTEXT_EXCHANGES = (
    ("I have a question about {area}.", "Of course. What would you like to know?"),
    ("Can I ask you something about {area}?", "Sure, go ahead and ask."),
    ("I've been thinking about {area} lately.", "Happy to help. What is on your mind?"),
)
CONTRACTIONS = (
    ("do not", "don't"),
    ("does not", "doesn't"),
    ("did not", "didn't"),
    ("is not", "isn't"),
    ("are not", "aren't"),
    ("cannot", "can't"),
    ("will not", "won't"),
    ("have not", "haven't"),
    ("it is", "it's"),
    ("that is", "that's"),
    ("there is", "there's"),
    ("you are", "you're"),
    ("you will", "you'll"),
    ("you would", "you'd"),
    ("they are", "they're"),
    ("what is", "what's"),
)


def opposite(dimension: str, pole: str) -> str:
    """The other pole of `dimension`."""
    first, second = DIMENSIONS[dimension]
    return second if pole == first else first


def random_style(rng: random.Random) -> Style:
    """One pole per dimension, each drawn independently."""
    return {dimension: rng.choice(poles) for dimension, poles in DIMENSIONS.items()}


def chosen_style(user: User, rng: random.Random) -> Style:
    """A style that satisfies every preference of `user`; the other dimensions are random."""
    return random_style(rng) | user.preferences


def rejected_style(user: User, rng: random.Random) -> Style:
    """A style that violates the user's preference (one or, for a two-dimension user, one or both dimensions)."""
    dimensions = sorted(user.preferences)
    if len(dimensions) == 1:
        violated = dimensions
    else:
        violated = rng.choice([[dimensions[0]], [dimensions[1]], dimensions])
    style = random_style(rng) | user.preferences
    for dimension in violated:
        style[dimension] = opposite(dimension, user.preferences[dimension])
    return style


def lead_sentences(topic: Topic, style: Style) -> list[str]:
    """The explanatory sentences in the order the style asks for; detail only appears in long answers."""
    detail = list(topic.detail) if style["length"] == "long" else []
    if style["order"] == "answer_first":
        return [topic.core, topic.background, *detail]
    return [topic.background, *detail, topic.core]


def step_sentences(topic: Topic, style: Style) -> list[str]:
    """The three steps as full sentences (long answers only)."""
    if style["length"] == "short":
        return []
    return [f"{step[0].upper()}{step[1:]}." for step in topic.steps]


def example_sentence(topic: Topic, style: Style) -> str | None:
    return f"For example, {topic.example}" if style["example"] == "with_example" else None


def render_bullets(lead: list[str], steps: list[str], example: str | None, opener: str, closer: str) -> str:
    items = [*lead, *steps, *([example] if example else [])]
    lines = ([opener] if opener else []) + [f"- {item}" for item in items] + ([closer] if closer else [])
    return "\n".join(lines)


def render_prose(
    lead: list[str], steps: list[str], example: str | None, opener: str, closer: str, connectors: Sequence[str]
) -> str:
    paragraphs = [" ".join(([opener] if opener else []) + lead)]
    if steps:
        joined = (f"{word}{step[0].lower()}{step[1:]}" for word, step in zip(connectors, steps, strict=True))
        paragraphs.append(" ".join(joined))
    if example:
        paragraphs[-1] += f" {example}"
    if closer:
        paragraphs[-1] += f" {closer}"
    return "\n\n".join(paragraphs)


def contract(text: str) -> str:
    """Casual wording: replace full forms with contractions, keeping a leading capital."""
    for full, short in CONTRACTIONS:
        pattern = re.compile(rf"\b{full}\b", re.IGNORECASE)
        text = pattern.sub(
            lambda match, short=short: short.capitalize() if match.group(0)[0].isupper() else short, text
        )
    return text


def render_response(topic: Topic, style: Style, rng: random.Random) -> str:
    """Render one response variant of `topic` in `style`."""
    casual = style["tone"] == "casual"
    opener = rng.choice(CASUAL_OPENERS) if casual else rng.choice(FORMAL_OPENERS)
    closer = rng.choice((*CASUAL_CLOSERS, "")) if casual else ""
    lead, steps, example = lead_sentences(topic, style), step_sentences(topic, style), example_sentence(topic, style)
    if style["format"] == "bullets":
        text = render_bullets(lead, steps, example, opener, closer)
    else:
        text = render_prose(lead, steps, example, opener, closer, STEP_CONNECTORS[style["tone"]])
    return contract(text) if casual else text


def build_context(topic: Topic, multi_turn: bool, rng: random.Random) -> list[dict[str, str]]:
    """The conversation so far, ending with the user's question (user, assistant, user when multi-turn)."""
    question = {"role": "user", "content": topic.question}
    if not multi_turn:
        return [question]
    opener, reply = rng.choice(CONTEXT_EXCHANGES)
    return [
        {"role": "user", "content": opener.format(area=topic.area)},
        {"role": "assistant", "content": reply},
        question,
    ]


def split_names() -> list[str]:
    """The split of each of a user's rows, in row order (train, then val, then test)."""
    return [name for name, size in SPLIT_SIZES for _ in range(size)]


def build_pair(
    user: User, index: int, split: str, topic: Topic, multi_turn: bool, rng: random.Random
) -> dict[str, Any]:
    """One PersonalRewardBench row: the user prefers `chosen` over `rejected` for this conversation."""
    context = build_context(topic, multi_turn, rng)
    chosen = render_response(topic, chosen_style(user, rng), rng)
    rejected = render_response(topic, rejected_style(user, rng), rng)
    if chosen == rejected:
        raise RuntimeError(f"{user.user_id} pair {index}: chosen and rejected render identically")
    return {
        "user_id": user.user_id,
        "split": split,
        "conversation_id": f"{user.user_id}_conv_{index:02d}",
        "context": context,
        "chosen": {"role": "model", "content": chosen},
        "rejected": {"role": "model", "content": rejected},
        "turns": sum(1 for message in context if message["role"] == "user"),
        "type": ROW_TYPE,
        "flip": rng.random() < 0.5,
        "latent_preference": user.latent_preference,
    }


def build_user_rows(user: User, rng: random.Random) -> list[dict[str, Any]]:
    """All of one user's pairs, each on a different topic, in split order."""
    topics = rng.sample(TOPICS, PAIRS_PER_USER)
    multi_turn = set(rng.sample(range(PAIRS_PER_USER), MULTI_TURN_PER_USER))
    return [
        build_pair(user, index, split, topic, index in multi_turn, rng)
        for index, (split, topic) in enumerate(zip(split_names(), topics, strict=True))
    ]


def build_rows(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [row for user in USERS for row in build_user_rows(user, rng)]


def write_jsonl(rows: list[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT,
        help="JSONL file to write (default: prefcraft/components/synthesizeme/sample/sample_users.jsonl)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    rows = build_rows(args.seed)
    write_jsonl(rows, args.output)
    print(f"wrote {len(rows)} rows for {len(USERS)} users to {args.output}")


if __name__ == "__main__":
    main()

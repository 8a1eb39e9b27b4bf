"""Generate prefcraft's bundled SYNTHETIC LaMP-QA sample (prefcraft/components/lampqa/sample/<config>/<split>.jsonl).

Rows follow the `alireza7/LaMP-QA` schema: `id`, `question`, `narrative`, `rubric_aspects` ({aspect, reason,
evidence}) and `profile` (past posts {id, text, category}). Each synthetic user has 3-5 traits (a tight budget, little
time, young children, ...). The profile really predicts the rubric: every trait shows in two past posts (one on the
question's own topic, so that retrieval can find it), the narrative states every trait, and the rubric has one aspect
per trait, its evidence the narrative's sentence, plus one aspect about how to begin. Filler posts on unrelated
subjects bring each profile to 10-14 posts. Seeded: the same seed writes the same files.

    .venv/bin/python -m prefcraft.components.lampqa.generate [--seed 0] [--output prefcraft/components/lampqa/sample]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

SPLIT_SIZES = {"train": 8, "validation": 4, "test": 4}
TOPICS = {
    "Art_and_Entertainment": ["learn the guitar", "paint with watercolors", "write short stories",
                              "get into photography", "learn to draw portraits", "sing in a choir"],
    "Lifestyle_and_Personal_Development": ["start running", "eat healthier", "build a morning routine",
                                           "learn a new language", "save for a holiday", "sleep better"],
    "Society_and_Culture": ["volunteer in my community", "learn about local history",
                            "get involved in local politics", "understand other religions", "support a grieving friend",
                            "talk about politics with family"],
}
QUESTION_FORMS = ["How should I {topic}?", "What is the best way to {topic}?", "Any advice on how to {topic}?"]
# trait: (past post about a topic, narrative sentence, aspect title, why it matters)
TRAITS = {
    "budget": ("Is there a cheap way to {topic}? Money is tight since I am a student and I cannot buy much.",
               "I have very little money to spend on this.", "Low-cost options",
               "The user is a student on a tight budget."),
    "time": ("Can I {topic} with only fifteen minutes a day? I work two jobs and have almost no free time.",
             "I only have a few minutes a day because of my two jobs.", "Fits a very busy schedule",
             "The user works two jobs and has little free time."),
    "kids": ("How can I {topic} with two young kids at home? They need me every few minutes.",
             "I have two small children who are always around.", "Works with young children around",
             "The user looks after two young children."),
    "small_space": ("I live in a tiny studio apartment. Is there room to {topic} here?",
                    "My apartment is very small.", "Suits a small apartment",
                    "The user lives in a tiny studio apartment."),
    "back_pain": ("With my bad back, how can I {topic} without pain? My doctor says to be careful.",
                  "I have a back injury and must avoid strain.", "Safe with a back injury",
                  "The user has a back injury and must avoid strain."),
    "new_city": ("I just moved to a new city and know nobody. Where can I meet people who {topic}?",
                 "I just moved here and would love to meet people.", "Ways to meet like-minded people",
                 "The user is new in town and wants company."),
    "evidence": ("Is there research on the best way to {topic}? I only trust advice with sources.",
                 "I want advice that is backed by research.", "Backed by research or sources",
                 "The user only trusts advice that cites evidence."),
    "remote": ("I live far out in the countryside. Are there online ways to {topic}?",
               "I live far from any town.", "Online or remote resources",
               "The user lives in the countryside far from any town."),
    "eco": ("How can I {topic} in an eco-friendly way? I try to avoid waste and plastic.",
            "I care a lot about the environment.", "Sustainable, low-waste choices",
            "The user cares about the environment and avoids waste."),
}
FIRST_STEPS = ("Concrete first steps", "The user asks how to begin and wants a clear place to start.")
FILLERS = [
    "What is the best way to clean a cast iron pan? Mine has rust spots after a camping trip.",
    "Why does my laptop fan get so loud in the evening? It is only two years old.",
    "How do I get rid of fruit flies in the kitchen? They came back after a week.",
    "Which houseplants are hard to kill? I forget to water mine.",
    "How do I fix a squeaky door hinge? Oil did not help for long.",
    "What should I look for in a second-hand bike? I found one online for a good price.",
    "Is it worth repairing an old washing machine? It leaks a little at the bottom.",
    "How do I remove a red wine stain from a carpet? It happened at a party last night.",
    "Why does bread go stale so fast in my kitchen? I keep it in a paper bag.",
    "How can I stop my cat scratching the sofa? She ignores her scratching post.",
    "How do I back up photos from an old phone? The screen is cracked.",
    "What is a good way to organise cables under a desk? It is a mess.",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=Path(__file__).resolve().parent / "sample")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    for config in TOPICS:
        for split, size in SPLIT_SIZES.items():
            rows = [make_question(rng, config, f"{config.split('_')[0].lower()}-{split}-{number:02d}")
                    for number in range(size)]
            path = args.output / config / f"{split}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
            print(f"wrote {len(rows)} questions to {path}")


def make_question(rng: random.Random, config: str, question_id: str) -> dict[str, object]:
    topic = rng.choice(TOPICS[config])
    traits = rng.sample(sorted(TRAITS), rng.randint(3, 5))
    posts = []
    for trait in traits:
        other_config = rng.choice(sorted(TOPICS))
        other_topic = rng.choice([t for t in TOPICS[other_config] if t != topic])
        posts.append((TRAITS[trait][0].format(topic=topic), config))
        posts.append((TRAITS[trait][0].format(topic=other_topic), other_config))
    fillers = rng.sample(FILLERS, max(4, 10 - len(posts)) + rng.randint(0, 2))
    posts.extend((text, "Home_and_Garden") for text in fillers)
    rng.shuffle(posts)
    narrative = " ".join([f"I want to {topic}.", *(TRAITS[trait][1] for trait in traits)])
    aspects = [{"aspect": TRAITS[trait][2], "reason": TRAITS[trait][3], "evidence": TRAITS[trait][1]}
               for trait in traits]
    aspects.append({"aspect": FIRST_STEPS[0], "reason": FIRST_STEPS[1], "evidence": f"I want to {topic}."})
    return {
        "id": question_id,
        "question": rng.choice(QUESTION_FORMS).format(topic=topic),
        "narrative": narrative,
        "rubric_aspects": aspects,
        "profile": [{"id": f"{question_id}-p{number:02d}", "text": text, "category": category}
                    for number, (text, category) in enumerate(posts)],
        "traits": traits,  # not in LaMP-QA's schema: loaders ignore it; it documents what the profile encodes
    }


if __name__ == "__main__":
    main()

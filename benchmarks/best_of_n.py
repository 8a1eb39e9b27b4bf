"""Best of n with a user's judge: a knockout against a full round robin, per n.

Fits one bundled sample user's judge (as the demo does, n = m = 2, unless `--judge` names a fitted one), then for each
of the user's first `--requests` test conversations and each n in `--sizes`, draws n candidate responses (the pair's
two, then others from the user's data, seeded) and picks the best with both tournaments, every comparison in both
orders. Reports per n: judge calls per choice (round robin n(n-1), knockout 2(n-1)), calls the server answered
(the round robin runs first, so the knockout's comparisons, all among the round robin's, come from DSPy's cache),
comparisons without a preference, and how often the two pick the same response. The candidates are SYNTHETIC sample
responses and the judge a 135M model's: the figures are the tournaments' cost and agreement on this model, not a
judge's quality.

Run: .venv/bin/python benchmarks/best_of_n.py [--user sample_user_07] [--requests 3] [--sizes 2 4 8]
    [--judge runs/fitted/sample_user_07.json] [--task-api-base URL]
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from harness import configure_logging, make_parser, model_endpoint, session_settings, write_result

import prefcraft
from prefcraft.components.synthesizeme.rerank import TOURNAMENTS, best_of_n
from prefcraft.components.synthesizeme.samples import SAMPLE_USERS
from prefcraft.engine.session import lm_context
from prefcraft.engine.usage import metered
from prefcraft.loaders.personal_reward_bench import UserPairs, group_by_user, load_pairs

Request = tuple[list[dict[str, str]], list[str]]  # the conversation, the candidates


def candidate_sets(user: UserPairs, requests: int, size: int, seed: int) -> list[Request]:
    """Per test pair (the first `requests`): its conversation and `size` candidates, the pair's two responses and
    others of the user's, in a seeded order."""
    pool = sorted({pair.chosen.content for pair in user.train + user.val + user.test}
                  | {pair.rejected.content for pair in user.train + user.val + user.test})
    rng = random.Random(seed)
    sets = []
    for pair in user.test[:requests]:
        own = [pair.chosen.content, pair.rejected.content][:size]
        others = rng.sample([text for text in pool if text not in own], size - len(own))
        candidates = own + others
        rng.shuffle(candidates)
        sets.append(([message.model_dump() for message in pair.context], candidates))
    return sets


def measure_size(judge: prefcraft.PersonalJudge, user: UserPairs, args: Any, size: int) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {name: {"judge_calls": 0, "server_calls": 0, "no_preference": 0, "seconds": 0.0}
                                       for name in TOURNAMENTS}
    same = 0
    sets = candidate_sets(user, args.requests, size, args.seed)
    for conversation, candidates in sets:
        chosen = {}
        for tournament in TOURNAMENTS:
            started = time.perf_counter()
            with metered() as meter:
                choice = best_of_n(judge.prefers, conversation, candidates, tournament)
            row = rows[tournament]
            row["judge_calls"] += choice.calls
            row["server_calls"] += meter.usage.calls
            row["no_preference"] += choice.failed
            row["seconds"] += time.perf_counter() - started
            chosen[tournament] = candidates[choice.best]
        same += chosen["round_robin"] == chosen["knockout"]
    for row in rows.values():
        row["judge_calls_per_choice"] = row["judge_calls"] / len(sets)
        row["seconds"] = round(row["seconds"], 1)
    return {"n": size, "choices": len(sets), **{name: rows[name] for name in TOURNAMENTS},
            "same_choice": same, "same_choice_share": same / len(sets)}


def main() -> None:
    parser = make_parser(__doc__, "best_of_n.json", threads=2)
    parser.add_argument("--user", default="sample_user_07", help="the bundled sample user whose judge picks")
    parser.add_argument("--judge", type=Path, help="that user's fitted judge (default: fit it here, n = m = 2)")
    parser.add_argument("--requests", type=int, default=3, help="test conversations per n")
    parser.add_argument("--sizes", type=int, nargs="+", default=[2, 4, 8], help="the n of best of n")
    parser.add_argument("--seed", type=int, default=0, help="draws the candidates")
    args = parser.parse_args()
    configure_logging()
    user = group_by_user(load_pairs(SAMPLE_USERS))[args.user]
    with model_endpoint(args) as endpoint:
        session = session_settings(args, endpoint)
        judge_path = args.judge
        if judge_path is None:
            search = prefcraft.SynthesizeMeConfig(num_persona_subsets=2, num_demo_candidates=2, search="halving")
            fitted = prefcraft.fit(session, users=[args.user], fitted_dir=endpoint.scratch / "fitted", config=search)
            judge_path = fitted.judges[args.user]
        judge = prefcraft.load_judge(judge_path)
        with lm_context(session, "task"):
            sizes = [measure_size(judge, user, args, size) for size in args.sizes]
    result = {"user": args.user, "judge": str(args.judge or "fitted here, n = m = 2, halving"),
              "model": session.task.model, "threads": args.threads, "sizes": sizes}
    write_result(args.output, result)
    for row in sizes:
        print(f"n={row['n']}: round robin {row['round_robin']['judge_calls_per_choice']:.0f} calls per choice, "
              f"knockout {row['knockout']['judge_calls_per_choice']:.0f}; same choice {row['same_choice']} of "
              f"{row['choices']}; no preference {row['round_robin']['no_preference']} / "
              f"{row['knockout']['no_preference']}")
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()

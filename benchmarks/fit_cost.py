"""What a SynthesizeMe fit costs per user, by step, and how judging scales with threads, on the embedded server.

Measures, per user and step, with the default persona prompt for the embedded model: LM requests, prompt and completion
tokens, wall time, the validation accuracy the search chose by, the chosen judge's accuracy on all validation
judgments and on the user's test judgments (both orders; neither counted as fit calls), for the paper's way (the
fit's defaults: Algorithm 1, its searches `exact`) and for each option that changes the cost, one at a time:
`exhaustive` (every candidate scored on every validation judgment, as the reference code: the same choices),
`halving` (successive halving: the choices can differ), `both_orders` (a pair verified in both orders,
demos balanced by order: one more bootstrap call per train pair), `from_step1` (step 3 reuses step 1's traces: one
bootstrap pass fewer) and `max_demos_4` (the small-model profile's cap of 4 demos: shorter prompts); failed calls;
the prompt tokens the server evaluated and served from its prefix cache (llama.cpp's /metrics). Every variant of a
user starts from one shared bootstrap: the train pairs are judged once in both orders in an empty DSPy cache, and each
variant runs in its own copy of that cache, so that they differ only in what they change (the embedded server is not
deterministic from run to run, and separate bootstraps would give them different verified pairs). The step-1 bootstrap
is counted in each variant as the calls it asks: one per train pair, two with `both_orders`, with the tokens of that
share of the shared bootstrap. `exhaustive` runs after `paper`, in a copy of the cache `paper` left (when both
run): every call the two searches share gets the same answer, so their choices differ only if the searches do. Its
calls are counted as asked (`calls_asked`: every LM call the fit made, cache hits included, the step-1 bootstrap's as
above), and its wall time and tokens are those of the calls `paper` did not make. Each row names the candidates chosen
(`chosen`: the persona's demo subset and the judge's demo set, as indices into the record's candidates), each
candidate's score and why it stopped (`candidates`), and the calls each search made (`search_calls`);
- the reference's call budget for the same user, two ways: the issue's estimate, (n + m) x validation judgments +
  bootstrap, and a count from SALT-NLP/SynthesizeMe's code, (n + 2) + (m + 3) candidates x validation judgments + two
  bootstraps + the persona call;
- wall time to judge a fixed set of pairs in both orders with 1, 2, 4 and 8 threads.

Run: .venv/bin/python benchmarks/fit_cost.py [--max-users 4] [--subsets 10] [--demo-candidates 10]
    [--variants paper exhaustive ...] [--thread-counts 1 2 4 8] [--task-api-base URL]
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path

import dspy
from dspy.utils.callback import BaseCallback
from harness import configure_logging, make_parser, model_endpoint, write_result

from prefcraft.backends.counters import metered_prompt_cache
from prefcraft.components.synthesizeme.fit import default_persona_prompt, load_persona_synthesizer
from prefcraft.components.synthesizeme.samples import SAMPLE_USERS
from prefcraft.engine.evaluation import judge_pairs
from prefcraft.engine.lm import build_adapter, build_lm, use_disk_cache
from prefcraft.loaders.personal_reward_bench import group_by_user, judge_set, load_pairs, train_val_split
from prefcraft.metrics.pairwise import pairwise_report
from prefcraft.optimizers.candidate_search import CandidateScore, paper_winner
from prefcraft.optimizers.synthesizeme import FitRecord, SynthesizeMe, SynthesizeMeConfig
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.settings import ModelSettings, ServerSettings, SmallModelProfile

logger = logging.getLogger("fit_cost")
VARIANTS: dict[str, dict[str, object]] = {
    "paper": {},
    "exhaustive": {"search": "exhaustive"},
    "halving": {"search": "halving"},
    "both_orders": {"verification": "both_orders"},
    "from_step1": {"step3_traces": "from_step1"},
    "max_demos_4": {"max_demos": 4},
}
"""Each option that changes a fit's cost, as its change to the fit's defaults (the paper's way)."""
STARTS_FROM = {"exhaustive": "paper"}
"""A variant that runs in a copy of the cache another left, when both run: the calls they share get the same answers."""


class CallCounter(BaseCallback):
    """Every LM call made, cache hits included."""

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()

    def on_lm_start(self, call_id, instance, inputs) -> None:
        with self._lock:
            self.calls += 1


def use_cache(directory: str) -> str:
    use_disk_cache(Path(directory))
    return directory


def fresh_cache() -> str:
    return use_cache(tempfile.mkdtemp())


def shared_bootstrap(user, num_threads: int, model: ModelSettings) -> tuple[str, dict]:
    """Judges the user's train pairs in both orders with the uncompiled judge, every request a fit's step-1 bootstrap
    may send, in an empty cache; the cache directory and what it cost."""
    cache_dir = fresh_cache()
    train, _ = train_val_split(user)
    started = time.perf_counter()
    _, usage = judge_pairs(PreferenceJudge(), train, model=model, num_threads=num_threads, progress=False)
    return cache_dir, {"usage": asdict(usage), "wall_s": round(time.perf_counter() - started, 1)}


def reference_budgets(record: FitRecord, config: SynthesizeMeConfig) -> dict[str, int]:
    n, m, val, train = config.num_persona_subsets, config.num_demo_candidates, 2 * record.val_pairs, record.train_pairs
    return {"issue_estimate": (n + m) * val + train, "reference_code": (n + 2 + m + 3) * val + 2 * train + 1}


def measure_fit(user, config: SynthesizeMeConfig, model: ModelSettings, bootstrap: dict) -> dict:
    """One fit in the current cache, which holds the shared bootstrap's calls; those are added back to its cost."""
    synthesizer, _ = load_persona_synthesizer(default_persona_prompt(model.model))
    started = time.perf_counter()
    train, val = train_val_split(user)
    counter = CallCounter()
    with metered_prompt_cache(model.api_base) as server, dspy.context(callbacks=[*dspy.settings.callbacks, counter]):
        judge = SynthesizeMe(synthesizer, config).compile(PreferenceJudge(), trainset=judge_set(train),
                                                          valset=judge_set(val))
    record = judge.fit_record
    share = 1.0 if config.verification == "both_orders" else 0.5  # of the shared bootstrap's two orders
    wall_s = round(time.perf_counter() - started + share * bootstrap["wall_s"], 1)
    if record.usage["bootstrap"].calls:
        logger.warning("%s: the shared bootstrap missed %d calls", user.user_id, record.usage["bootstrap"].calls)
    by_step = {step: asdict(usage) for step, usage in record.usage.items()} | {
        "bootstrap": {key: round(share * value) for key, value in bootstrap["usage"].items()}}
    val_judgments, _ = judge_pairs(judge, val, model=model, num_threads=config.num_threads, progress=False)
    test_judgments, _ = judge_pairs(judge, user.test, model=model, num_threads=config.num_threads, progress=False)
    row = {
        "user": user.user_id, "wall_s": wall_s, "val_accuracy": record.val_accuracy,
        "val_all_accuracy": pairwise_report(val_judgments).accuracy.mean if val_judgments else None,
        "test_accuracy": pairwise_report(test_judgments).accuracy.mean if test_judgments else None,
        "calls": sum(step["calls"] for step in by_step.values()),
        "calls_asked": counter.calls,
        "search_calls": {"persona_evidence": sum(score["judged"] for score in record.subset_scores),
                         "demo_search": sum(score["judged"] for score in record.demo_scores)},
        "chosen": {"subset": record.chosen_subset, "demos": record.chosen_demos},
        "candidates": {"subsets": record.subset_scores, "demos": record.demo_scores},
        "prompt_tokens": sum(step["prompt_tokens"] for step in by_step.values()),
        "completion_tokens": sum(step["completion_tokens"] for step in by_step.values()),
        "by_step": by_step, "demos": record.demos,
        "failed_calls": sum(record.failed_calls.values()),
        **(server.usage.as_metrics() if server.usage else {}),
        **reference_budgets(record, config),
    }
    logger.info("%s %s", user.user_id, row)
    return row


def measure_threads(pairs: list, model: ModelSettings, thread_counts: list[int]) -> list[dict]:
    rows = []
    for threads in thread_counts:
        fresh_cache()
        started = time.perf_counter()
        judgments, usage = judge_pairs(PreferenceJudge(), pairs, model=model, num_threads=threads, progress=False)
        rows.append({"threads": threads, "judgments": len(judgments), "calls": usage.calls,
                     "wall_s": round(time.perf_counter() - started, 1)})
        logger.info("threads %s", rows[-1])
    return rows


def print_tables(fits: dict[str, list[dict]], threads: list[dict]) -> None:
    """The LM calls columns are calls sent (cache hits excluded); `asked` counts cache hits too, which differs for a
    variant run in another's cache (`STARTS_FROM`)."""
    print("| variant | user | LM calls | asked | bootstrap | persona evidence | persona | persona bootstrap | "
          "demo search | prompt tok | completion tok | wall s | search val acc | val acc (all) | test acc | "
          "issue estimate | reference code |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for mode, rows in fits.items():
        for row in rows:
            steps = row["by_step"]
            print(f"| {mode} | {row['user']} | {row['calls']} | {row.get('calls_asked', '')} | "
                  f"{steps['bootstrap']['calls']} | {steps['persona_evidence']['calls']} | "
                  f"{steps['persona']['calls']} | "
                  f"{steps.get('persona_bootstrap', {}).get('calls', 0)} | "
                  f"{steps['demo_search']['calls']} | {row['prompt_tokens']} | {row['completion_tokens']} | "
                  f"{row['wall_s']:.1f} | {row['val_accuracy']:.3f} | {_rate(row['val_all_accuracy'])} | "
                  f"{_rate(row['test_accuracy'])} | {row['issue_estimate']} | {row['reference_code']} |")
    for mode, rows in fits.items():
        key = "calls_asked" if all("calls_asked" in row for row in rows) else "calls"
        n = len(rows)
        print(f"{mode}: {n} users, mean per user {_mean(rows, key):.1f} LM calls{' asked' if key != 'calls' else ''} "
              f"({sum(r[key] for r in rows) / sum(r['issue_estimate'] for r in rows):.0%} of the issue's estimate, "
              f"{sum(r[key] for r in rows) / sum(r['reference_code'] for r in rows):.0%} of the reference code's), "
              f"{_mean(rows, 'wall_s'):.1f} s, search val acc {_mean(rows, 'val_accuracy'):.3f}, "
              f"val acc (all) {_rate(_mean(rows, 'val_all_accuracy'))}, test acc {_rate(_mean(rows, 'test_accuracy'))}")
    if "paper" in fits and "exhaustive" in fits:
        print_exact_against_exhaustive(fits["paper"], fits["exhaustive"])
    if threads:
        print("\n| threads | judgments | LM calls | wall s |\n|---|---|---|---|")
    for row in threads:
        print(f"| {row['threads']} | {row['judgments']} | {row['calls']} | {row['wall_s']} |")


def fewest_search_calls(candidates: list[dict], stop_at: float | None = 0.8) -> int:
    """The fewest calls the paper's rule allows for a search whose complete scores are `candidates` (exhaustive's),
    with the winner judged to the end as `exact` judges it: had a search known where each candidate errs, it would
    still need, for every other candidate, enough wrong answers that it cannot reach `stop_at` and cannot beat the
    winner (an earlier one, cannot tie it), or none for one after a winner that reaches `stop_at`."""
    scores = [CandidateScore(i, c["correct"], c["judged"], c["total"]) for i, c in enumerate(candidates)]
    winner = scores[paper_winner(scores, stop_at)]
    calls = winner.total
    for score in scores:
        if score is winner or (winner.guarantees(stop_at) and score.index > winner.index):
            continue
        wrong = 0 if winner.guarantees(stop_at) else int(score.total - winner.correct) + (score.index < winner.index)
        while wrong < score.total and CandidateScore(score.index, 0.0, wrong, score.total).can_reach(stop_at):
            wrong += 1
        calls += wrong
    return calls


def print_exact_against_exhaustive(exact: list[dict], exhaustive: list[dict]) -> None:
    """Per user, the calls each fit asked and made in its two searches, and whether they chose the same candidates."""
    print("\n| user | LM calls, exact | LM calls, exhaustive | ratio | search calls, exact | search calls, "
          "exhaustive | fewest the rule allows | chosen (persona subset, demo set), exact | exhaustive | identical |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    pairs = [(row, other) for row in exact for other in exhaustive if other["user"] == row["user"]]
    for row, other in pairs:
        searches = [sum(fit["search_calls"].values()) for fit in (row, other)]
        fewest = sum(fewest_search_calls(candidates) for candidates in other["candidates"].values())
        chosen = [(fit["chosen"]["subset"], fit["chosen"]["demos"]) for fit in (row, other)]
        print(f"| {row['user']} | {row['calls_asked']} | {other['calls_asked']} | "
              f"{row['calls_asked'] / other['calls_asked']:.2f} | {searches[0]} | {searches[1]} | {fewest} | "
              f"{chosen[0]} | {chosen[1]} | {'yes' if chosen[0] == chosen[1] else 'NO'} |")
    if pairs:
        asked = [sum(fit["calls_asked"] for fit in fits) for fits in zip(*pairs, strict=True)]
        print(f"exact against exhaustive: {len(pairs)} users, mean per user {asked[0] / len(pairs):.1f} against "
              f"{asked[1] / len(pairs):.1f} LM calls ({asked[0] / asked[1]:.2f} x), chosen candidates identical on "
              f"{sum(a['chosen'] == b['chosen'] for a, b in pairs)} of {len(pairs)} users")


def _mean(rows: list[dict], key: str) -> float | None:
    values = [row[key] for row in rows if row[key] is not None]
    return sum(values) / len(values) if values else None


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def main() -> None:
    parser = make_parser(__doc__, "fit_cost.json", timeout_s=300.0)
    parser.add_argument("--max-users", "--users", type=int, default=4, help="how many sample users to fit")
    parser.add_argument("--subsets", type=int, default=10)
    parser.add_argument("--demo-candidates", type=int, default=10)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS),
                        help="the paper's way and the options compared with it")
    parser.add_argument("--thread-counts", type=int, nargs="*", default=[1, 2, 4, 8], help="none: skip")
    parser.add_argument("--thread-users", type=int, default=2, help="sample users whose test pairs are judged")
    parser.add_argument("--server-slots", "--slots", type=int, default=4, help="the embedded server's parallel slots")
    parser.add_argument("--resume", action="store_true",
                        help="keep the users --output already holds for every variant, fit the others")
    args = parser.parse_args()
    configure_logging("dspy")

    all_users = list(group_by_user(load_pairs(SAMPLE_USERS)).values())
    users = all_users[: args.max_users]
    fits: dict[str, list[dict]] = {variant: [] for variant in args.variants}
    if args.resume and args.output.exists():
        fits = json.loads(args.output.read_text(encoding="utf-8"))["fits"]
    done = set.intersection(*({row["user"] for row in fits.get(variant, [])} for variant in args.variants))
    fits = {variant: [row for row in fits.get(variant, []) if row["user"] in done] for variant in args.variants}
    threads: list[dict] = []
    with model_endpoint(args, ServerSettings(slots=args.server_slots), max_tokens=256) as endpoint:
        model = endpoint.model
        with dspy.context(lm=build_lm(model), adapter=build_adapter(model, SmallModelProfile())):
            # User by user, every variant, so that a run cut short leaves paired figures.
            for user in (user for user in users if user.user_id not in done):
                configs = {variant: SynthesizeMeConfig(num_persona_subsets=args.subsets,
                                                       num_demo_candidates=args.demo_candidates,
                                                       num_threads=args.threads, **VARIANTS[variant])
                           for variant in args.variants}
                bootstrap_cache, bootstrap = shared_bootstrap(user, args.threads, model)
                caches = {}
                for variant, config in sorted(configs.items(), key=lambda item: item[0] in STARTS_FROM):
                    start = caches.get(STARTS_FROM.get(variant), bootstrap_cache)
                    caches[variant] = use_cache(shutil.copytree(start, tempfile.mkdtemp(), dirs_exist_ok=True))
                    fits[variant].append(measure_fit(user, config, model, bootstrap))
                    write_result(args.output, {"slots": args.server_slots, "fits": fits, "threads": threads})
            test_pairs = [pair for user in all_users[: args.thread_users] for pair in user.test]
            threads = measure_threads(test_pairs, model, args.thread_counts)
    print_tables(fits, threads)
    write_result(args.output, {"slots": args.server_slots, "fits": fits, "threads": threads})


if __name__ == "__main__":
    main()

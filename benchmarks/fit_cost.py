"""What a SynthesizeMe fit costs per user, by step, and how judging scales with threads, on the embedded server.

Measures (each mode in a fresh, empty DSPy cache, so only repeats within one run are free):
- per user and step: LM requests, prompt and completion tokens, wall time, validation accuracy, for prefcraft's fit
  (`pruned`: candidates abandoned once they cannot win) and for the same search scoring every candidate on every
  validation judgment (`exhaustive`, the reference code's way, which also re-bootstraps in step 3: counted apart);
- wall time to judge a fixed set of pairs in both orders with 1, 2, 4 and 8 threads.

Run: .venv/bin/python benchmarks/fit_cost.py [--users 4] [--subsets 10] [--demo-candidates 10] [--thread-users 2]
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import dspy

from optimizers.synthesizeme import SynthesizeMe, SynthesizeMeConfig
from prefcraft.backends import managed_server
from prefcraft.data import SAMPLE_USERS
from prefcraft.evaluation import judge_pairs
from prefcraft.lm import build_adapter, build_lm
from prefcraft.loaders.personal_reward_bench import group_by_user, load_pairs
from prefcraft.settings import ModelSettings, ServerSettings
from programs.judge import PreferenceJudge
from programs.persona import PersonaSynthesizer

logger = logging.getLogger("fit_cost")


def fresh_cache() -> None:
    dspy.configure_cache(enable_disk_cache=True, enable_memory_cache=True, disk_cache_dir=tempfile.mkdtemp())


def measure_fits(users: list, config: SynthesizeMeConfig) -> list[dict]:
    fresh_cache()
    rows = []
    for user in users:
        started = time.perf_counter()
        _, record = SynthesizeMe(PersonaSynthesizer(), config).fit(user)
        rows.append({
            "user": user.user_id, "wall_s": round(time.perf_counter() - started, 1),
            "val_accuracy": record.val_accuracy, "calls": record.total_usage.calls,
            "prompt_tokens": record.total_usage.prompt_tokens,
            "completion_tokens": record.total_usage.completion_tokens,
            "by_step": {step: asdict(usage) for step, usage in record.usage.items()},
        })
        logger.info("%s %s", "pruned" if config.prune_candidates else "exhaustive", rows[-1])
    return rows


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
    print("| mode | user | LM calls | bootstrap | persona evidence | persona | demo search | prompt tok | "
          "completion tok | wall s | val acc |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for mode, rows in fits.items():
        for row in rows:
            steps = row["by_step"]
            print(f"| {mode} | {row['user']} | {row['calls']} | {steps['bootstrap']['calls']} | "
                  f"{steps['persona_evidence']['calls']} | {steps['persona']['calls']} | "
                  f"{steps['demo_search']['calls']} | {row['prompt_tokens']} | {row['completion_tokens']} | "
                  f"{row['wall_s']} | {row['val_accuracy']:.2f} |")
    for mode, rows in fits.items():
        n = len(rows)
        print(f"{mode}: mean per user {sum(r['calls'] for r in rows) / n:.1f} calls, "
              f"{sum(r['wall_s'] for r in rows) / n:.1f} s, val acc {sum(r['val_accuracy'] for r in rows) / n:.3f}")
    print("\n| threads | judgments | LM calls | wall s |\n|---|---|---|---|")
    for row in threads:
        print(f"| {row['threads']} | {row['judgments']} | {row['calls']} | {row['wall_s']} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=4, help="how many sample users to fit")
    parser.add_argument("--subsets", type=int, default=10)
    parser.add_argument("--demo-candidates", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2, help="threads for the fits")
    parser.add_argument("--thread-counts", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--thread-users", type=int, default=2, help="sample users whose test pairs are judged")
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/fit_cost.json"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    for noisy in ("LiteLLM", "httpx", "dspy"):
        logging.getLogger(noisy).setLevel(logging.WARNING)

    all_users = list(group_by_user(load_pairs(SAMPLE_USERS)).values())
    users = all_users[: args.users]
    with managed_server(ServerSettings(log_dir=Path(tempfile.mkdtemp()))) as server:
        model = ModelSettings(api_base=server.base_url, max_tokens=256)
        with dspy.context(lm=build_lm(model), adapter=build_adapter(model)):
            fits = {
                mode: measure_fits(users, SynthesizeMeConfig(
                    num_persona_subsets=args.subsets, num_demo_candidates=args.demo_candidates,
                    num_threads=args.threads, prune_candidates=mode == "pruned"))
                for mode in ("pruned", "exhaustive")
            }
            test_pairs = [pair for user in all_users[: args.thread_users] for pair in user.test]
            threads = measure_threads(test_pairs, model, args.thread_counts)
    print_tables(fits, threads)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"fits": fits, "threads": threads}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

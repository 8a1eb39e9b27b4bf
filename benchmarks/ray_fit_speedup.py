"""Wall time of `prefcraft synthesizeme fit --executor ray` on 1 and on 2 Ray workers.

The model is two stand-in OpenAI-compatible servers (tests/openai_standin.py) that answer each call after
`--delay-s`, as servers on other machines would: on this 2-core machine two real embedded servers would share the
cores the workers need, so the figure would measure the CPU, not the executor. Each run fits the same sample users
(n = m = 2, 2 demos) in a fresh cache and MLflow store and a fresh local Ray runtime of that many CPUs; the worker
counts alternate (1, 2, 1, 2, ...) so that a drift of the machine touches both.

Run: .venv/bin/python benchmarks/ray_fit_speedup.py [--max-users 4] [--delay-s 0.3] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
import warnings
from pathlib import Path

import ray

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from openai_standin import StandInServer

from prefcraft import api
from prefcraft.components.synthesizeme.samples import SAMPLE_USERS
from prefcraft.optimizers.synthesizeme import SynthesizeMeConfig
from prefcraft.settings import ModelSettings, Settings

RESULTS = Path(__file__).resolve().parent / "results" / "ray_fit_speedup.json"


def fit_once(workers: int, users: list[str], servers: list[StandInServer], config: SynthesizeMeConfig) -> dict:
    work = Path(tempfile.mkdtemp())
    settings = Settings(task=ModelSettings(api_bases=[server.api_base for server in servers]), serve=False,
                        cache_dir=work / "cache", tracking_uri=f"sqlite:///{work}/mlflow.db")
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    before = sum(len(server.bodies) for server in servers)
    started = time.perf_counter()
    try:
        summary = api.fit(settings, data=SAMPLE_USERS, fitted_dir=work / "fitted", users=users, config=config,
                          executor="ray")
    finally:
        ray.shutdown()
    return {"workers": workers, "wall_s": round(time.perf_counter() - started, 1), "fitted": len(summary.fitted),
            "calls": sum(len(server.bodies) for server in servers) - before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-users", "--users", type=int, default=4, help="the first N sample users")
    parser.add_argument("--delay-s", type=float, default=0.3, help="each stand-in answer's delay")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    warnings.simplefilter("ignore", DeprecationWarning)
    users = [f"sample_user_{n:02d}" for n in range(1, args.max_users + 1)]
    config = SynthesizeMeConfig(num_persona_subsets=2, num_demo_candidates=2, max_demos=2, num_threads=2)
    servers = [StandInServer(delay_s=args.delay_s) for _ in range(2)]
    runs = [fit_once(workers, users, servers, config) for _ in range(args.repeats) for workers in (1, 2)]
    mean = {workers: sum(run["wall_s"] for run in runs if run["workers"] == workers) / args.repeats
            for workers in (1, 2)}
    result = {"users": args.max_users, "delay_s": args.delay_s, "runs": runs,
              "mean_wall_s": mean, "speedup_2_over_1": round(mean[1] / mean[2], 2)}
    args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print("| workers | wall s | LM calls | users fitted |\n|---|---|---|---|")
    for run in runs:
        print(f"| {run['workers']} | {run['wall_s']} | {run['calls']} | {run['fitted']} |")
    print(f"2 workers over 1: {result['speedup_2_over_1']}x (mean wall {mean[1]:.1f} s vs {mean[2]:.1f} s)")


if __name__ == "__main__":
    main()

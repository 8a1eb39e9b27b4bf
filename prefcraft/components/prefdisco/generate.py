"""Write the bundled SYNTHETIC PrefDisco scenarios from the bundled problems, with prefcraft's scenario builder.

The problems (prefcraft/components/prefdisco/sample/problems.jsonl: math, science and social reasoning with answers)
were written
for the project; the personas, profiles and rubrics are sampled by the seeded, rule-based builder
(prefcraft/components/prefdisco/build.py). No LLM, no network; the same seed always writes byte-identical output:

    .venv/bin/python -m prefcraft.components.prefdisco.generate            # seed 0 -> sample/scenarios.jsonl beside it
    .venv/bin/python -m prefcraft.components.prefdisco.generate --seed 1 --output /tmp/other.jsonl
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prefcraft.components.prefdisco.build import SAMPLE_PROBLEMS, build_scenario_file, read_problems
from prefcraft.components.prefdisco.data import SAMPLE_SCENARIOS
from prefcraft.components.prefdisco.options import BuildOptions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=SAMPLE_SCENARIOS)
    args = parser.parse_args()
    options = BuildOptions(problems=SAMPLE_PROBLEMS, output=args.output)
    outcome = build_scenario_file(read_problems(SAMPLE_PROBLEMS), options, args.seed)
    print(f"wrote {outcome.scenarios} synthetic scenarios to {outcome.path}")


if __name__ == "__main__":
    main()

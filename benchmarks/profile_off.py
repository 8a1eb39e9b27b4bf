"""Each component's smallest command with the small-model profile on and off, on the embedded model.

With the profile off, replies are bounded only by each role's `max_tokens`, as in the papers; the 135M model then often
writes until that budget ends. For each component and profile, one `prefcraft` command runs in its own process, in a
fresh folder (empty DSPy cache, its own MLflow store, its own embedded server), and the benchmark reports:
- exit code and wall seconds (the server's start included);
- LM calls answered, prompt and completion tokens, HTTP requests (prefcraft's usage metering over the whole command);
- answers the server ended at `max_tokens` (`cut_short`) and calls whose reply did not parse into the signature's
  outputs (`unparsed`); parsed share = 1 - unparsed / calls. A reply cut short may still parse: JSON repair closes
  the string it was writing.

The commands are the smallest run of each component's main step (the failure matrix's, tests/test_failure_matrix.py);
SenseJudge's `demo` simulates its labels from SenseBench's dialogues (`--sensebench`, not shipped), selects a judge and
evaluates it. Run it on an idle machine: every command starts its own server on the same cores.

Run: .venv/bin/python benchmarks/profile_off.py --sensebench ../shared/data/sensebench [--components cupid lampqa]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from harness import RESULTS, write_result

PROFILES = {"on": "true", "off": "false"}
COMMANDS = {
    "synthesizeme": ["synthesizeme", "evaluate", "--users", "sample_user_01"],
    "sensejudge": ["sensejudge", "demo", "--topics", "QA", "Math", "--dev-dialogues", "1", "--test-dialogues", "1",
                   "--response-models", "concise", "detailed", "--data", "runs/pairs.jsonl",
                   "--judge-file", "compiled/sensejudge.json", "--max-pair-descriptions", "1", "--output-dir", "runs"],
    "prefdisco": ["prefdisco", "evaluate", "--max-scenarios", "1", "--output-dir", "runs"],
    "cupid": ["cupid", "evaluate", "--max-instances", "1", "--output-dir", "runs"],
    "lampqa": ["lampqa", "evaluate", "--max-questions", "1", "--output-dir", "runs"],
}


def run_command(argv: list[str], usage_file: Path) -> int:
    """In the child process: the command, metered as a whole; its usage is written to `usage_file`."""
    from prefcraft.commands.main import main
    from prefcraft.engine.usage import metered

    with metered() as meter:
        code = main(argv)
    usage_file.write_text(json.dumps(asdict(meter.usage)))
    return code


def measure(component: str, profile: str, sensebench: Path | None) -> dict[str, Any]:
    argv = list(COMMANDS[component])
    if component == "sensejudge":
        argv[2:2] = ["--sensebench", str(sensebench)]
    with tempfile.TemporaryDirectory(prefix=f"profile-{profile}-{component}-") as scratch:
        folder = Path(scratch)
        argv += ["--cache-dir", str(folder / "cache"), "--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}"]
        usage_file = folder / "usage.json"
        environment = {**os.environ, "PREFCRAFT_SMALL_MODEL__ENABLED": PROFILES[profile]}
        started = time.perf_counter()
        with open(folder / "output.log", "w") as log:
            child = [sys.executable, str(Path(__file__).resolve()), "--run", str(usage_file), "--", *argv]
            code = subprocess.run(child, cwd=folder, env=environment, stdout=log, stderr=subprocess.STDOUT).returncode
        seconds = time.perf_counter() - started
        usage = json.loads(usage_file.read_text()) if usage_file.exists() else None
        tail = (folder / "output.log").read_text(errors="replace").splitlines()[-5:] if code else []
    row = {"component": component, "profile": profile, "command": "prefcraft " + " ".join(COMMANDS[component]),
           "exit_code": code, "wall_seconds": round(seconds, 1), **(usage or {})}
    if usage and usage["calls"]:
        row["parsed_share"] = round(1 - usage["unparsed"] / usage["calls"], 3)
    if tail:
        row["output_tail"] = tail
    return row


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'component':<13}{'profile':<8}{'exit':>5}{'wall s':>8}{'calls':>7}{'compl. tok':>11}{'tok/call':>9}"
          f"{'cut short':>10}{'unparsed':>9}{'parsed':>8}")
    for row in rows:
        calls = row.get("calls", 0)
        print(f"{row['component']:<13}{row['profile']:<8}{row['exit_code']:>5}{row['wall_seconds']:>8.1f}{calls:>7}"
              f"{row.get('completion_tokens', 0):>11}{row.get('completion_tokens', 0) / max(calls, 1):>9.1f}"
              f"{row.get('cut_short', 0):>10}{row.get('unparsed', 0):>9}{100 * row.get('parsed_share', 0):>7.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sensebench", type=Path, help="SenseBench's new_sense_bmk.json or its folder; without it, "
                        "SenseJudge is left out")
    parser.add_argument("--components", nargs="+", choices=COMMANDS, default=list(COMMANDS))
    parser.add_argument("--profiles", nargs="+", choices=PROFILES, default=list(PROFILES))
    parser.add_argument("--output", type=Path, default=RESULTS / "profile_off.json")
    args = parser.parse_args()
    components = [c for c in args.components if c != "sensejudge" or args.sensebench]
    rows = []
    for component in components:
        for profile in args.profiles:
            rows.append(measure(component, profile, args.sensebench and args.sensebench.resolve()))
            print(json.dumps({key: rows[-1][key] for key in ("component", "profile", "exit_code", "wall_seconds")}),
                  flush=True)
    write_result(args.output, {"rows": rows})
    print_table(rows)
    print(f"written to {args.output}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run"]:
        sys.exit(run_command(sys.argv[4:], Path(sys.argv[2])))
    main()

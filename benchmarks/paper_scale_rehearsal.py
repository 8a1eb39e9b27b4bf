"""Every paper-scale experiment file rehearsed (`prefcraft experiment rehearse`) at full size with injected faults,
then a rehearsal killed midway and resumed, then SynthesizeMe's rehearsal scaled out: a plumbing and cost measurement
on synthetic data and instant servers on loopback, never a score.

Per file: the requests the server saw and the LM calls the steps metered, beside the estimate
(benchmarks/results/paper_scale_cost.json); wall time, requests per second, this process's CPU ms per request (the
instant server's threads included), peak RSS, the LM cache's size, the faults injected and met, the failed items the
steps counted, and per role whether its longest prompt plus max_tokens exceeds the context the file serves. Each file
runs in a process of its own (its own peak RSS), with --context-tokens at the file's served context. A file run at a
smaller scale (`--scale NAME=S`; PrefDisco runs at 0.1, max_per_task 100, by default) is extrapolated linearly to full
size, and says so.

Kill and resume: an instant server in its own process (its request log outlives it); SynthesizeMe's rehearsal killed
(SIGKILL) once the server has answered half the requests the file's estimate gives, the server killed (SIGKILL) and
restarted at a quarter; then `rehearse --resume`. Checked: no body answered before the kill is sent again beyond those
in flight (at most --threads), and every test user is fitted.

Scale-out: SynthesizeMe's rehearsal with 1 endpoint, 2 endpoints (api_bases) and `--executor ray` (a local Ray
cluster): requests, distinct bodies, the bodies shared with the 1-endpoint run, and the users fitted.

Run: .venv/bin/python benchmarks/paper_scale_rehearsal.py [--quick] [--files NAME ...] [--scale NAME=S ...]
[--skip files resume scale-out] [--threads N] [--output FILE]; --quick runs everything at a tiny scale and writes
nothing unless --output is given.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from harness import REPOSITORY, RESULTS, write_result

from prefcraft.experiments.files import load_experiment
from prefcraft.experiments.rehearsal.data import PRISM_USERS, scaled
from prefcraft.experiments.rehearsal.instant_server import Faults
from prefcraft.experiments.rehearsal.run import RehearsalOutcome, Serving, estimates, rehearse, served_context

EXPERIMENTS = REPOSITORY / "experiments"
FILES = ("cupid-main", "sensejudge-subsets", "synthesizeme-table3", "lampqa-methods", "prefdisco-conditions")
"""Smallest first (paper_scale_cost.json's calls)."""
SCALE_OUT_FILE = "synthesizeme-table3"
SCALE_OUT_THREADS = 1
FAULTS = {"error_rate": 0.01, "cut_rate": 0.01}
QUICK = {"scale": 0.002, "prefdisco_scale": 0.0001, "sensejudge_scale": 0.01, "scale_out_scale": 0.0027,
         "resume_scale": 0.0027}
QUICK_SENSEJUDGE = {"max_pair_descriptions = 10": "max_pair_descriptions = 1",
                    "dev_pairs_per_topic = 10": "dev_pairs_per_topic = 2"}
"""--quick's SenseJudge: one description per pair and two dev pairs per topic, not ten."""
FULL = {"scale": 1.0, "prefdisco_scale": 0.1, "sensejudge_scale": 1.0, "scale_out_scale": 0.02, "resume_scale": 0.02}
"""PrefDisco at a tenth (max_per_task 100 of its 1,000 scenarios per task), extrapolated: 800k calls do not fit a
run."""
NOT_A_SCORE = "REHEARSAL, NOT A SCORE: synthetic data, instant servers on loopback; no number here measures a model"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="everything at a tiny scale (about 2 minutes on 2 cores, Ray's start included)")
    parser.add_argument("--files", nargs="+", default=list(FILES), choices=FILES, metavar="NAME")
    parser.add_argument("--scale", nargs="+", default=[], metavar="NAME=S",
                        help="a file's scale, below its default (1; PrefDisco 0.1) where the full size does not fit "
                        "the time: its row is extrapolated to full size")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--skip", nargs="*", default=[], choices=("files", "resume", "scale-out"))
    parser.add_argument("--output", type=Path, default=None,
                        help="default: benchmarks/results/paper_scale_rehearsal.json (none with --quick)")
    parser.add_argument("--row", type=json.loads, help=argparse.SUPPRESS)  # one rehearsal, in this process
    args = parser.parse_args()
    if args.row is not None:
        print(json.dumps(rehearsal_row(**args.row)))
        return
    sizes = dict(QUICK if args.quick else FULL)
    scales = {name: float(scale) for name, scale in (given.split("=") for given in args.scale)}
    threads = 4 if args.quick else args.threads
    result: dict[str, Any] = {"note": NOT_A_SCORE, "faults": FAULTS, "threads": threads, "sizes": sizes}
    with tempfile.TemporaryDirectory(prefix="paper-scale-rehearsal-") as scratch:
        work = Path(scratch)
        if "files" not in args.skip:
            result["files"] = [file_row(name, scales.get(name, _scale_of(name, sizes)), threads, work / name,
                                        quick=args.quick) for name in args.files]
        if "resume" not in args.skip:
            result["kill_and_resume"] = kill_and_resume(sizes["resume_scale"], threads, work / "resume")
        if "scale-out" not in args.skip:
            result["scale_out"] = scale_out(sizes["scale_out_scale"], work / "scale-out")
    output = args.output or (None if args.quick else RESULTS / "paper_scale_rehearsal.json")
    if output:
        write_result(output, result)
    print(json.dumps(result, indent=2))


def _scale_of(name: str, sizes: dict[str, float]) -> float:
    return {"prefdisco-conditions": sizes["prefdisco_scale"],
            "sensejudge-subsets": sizes["sensejudge_scale"]}.get(name, sizes["scale"])


# ---- one file ----

def file_row(name: str, scale: float, threads: int, work: Path, quick: bool = False) -> dict[str, Any]:
    """The file rehearsed at `scale` with the faults, the server refusing what exceeds the file's served context; in
    a process of its own, but with `quick` (smaller too there: QUICK_SENSEJUDGE)."""
    path = EXPERIMENTS / f"{name}.toml"
    text = path.read_text(encoding="utf-8")
    if quick and name == "sensejudge-subsets":
        for full, smaller in QUICK_SENSEJUDGE.items():
            text = text.replace(full, smaller)
        path = work.parent / f"{name}.toml"
        path.write_text(text, encoding="utf-8")
    context = served_context(text, load_experiment(path).settings.task.model).tokens
    given = {"path": str(path), "scale": scale, "threads": threads, "work_dir": str(work),
             "faults": {**FAULTS, "context_tokens": context}}
    row = rehearsal_row(**given) if quick else in_own_process(given)
    share = row["share"]
    row["full_size"] = {"extrapolated": share < 1,
                        "requests": round(row["requests"] / share), "lm_calls": round(row["lm_calls"] / share),
                        "wall_s": round(row["wall_s"] / share), "estimate_calls": row["estimate_calls_full"]}
    return row


def in_own_process(row: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, "--row", json.dumps(row)], capture_output=True, text=True,
                          cwd=REPOSITORY, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"rehearsal of {row['path']} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def rehearsal_row(path: str, scale: float, threads: int, work_dir: str, faults: dict[str, Any] | None = None,
                  endpoints: int = 1, executor: str | None = None, request_log: str | None = None) -> dict[str, Any]:
    serving = Serving(endpoints=endpoints, executor=executor,  # type: ignore[arg-type]
                      request_log=Path(request_log) if request_log else None)
    outcome = rehearse(Path(path), scale, Faults(**(faults or {})), work_dir=Path(work_dir), threads=threads,
                       serving=serving, emit=lambda line: None)
    return outcome_row(outcome)


def outcome_row(outcome: RehearsalOutcome) -> dict[str, Any]:
    estimate = sum(role.estimate.calls for role in outcome.roles if role.estimate)
    lm_calls = sum(step.usage.calls for step in outcome.steps)
    return {
        "file": f"experiments/{outcome.experiment}.toml", "scale": outcome.scale, "share": outcome.data.share,
        "items": outcome.data.items, "requests": outcome.requests, "lm_calls": lm_calls,
        "estimate_calls": estimate, "estimate_calls_full": round(estimate / outcome.data.share),
        "requests_over_estimate": round(outcome.requests / estimate, 3) if estimate else None,
        "wall_s": round(outcome.wall_s, 1),
        "requests_per_s": round(outcome.requests / outcome.wall_s, 1) if outcome.wall_s else None,
        "cpu_ms_per_request": round(outcome.cpu_ms_per_call, 1) if outcome.cpu_ms_per_call else None,
        "peak_rss_mib": round(outcome.peak_rss_mib), "cache_mib": round(outcome.cache_bytes / 2**20, 1),
        "faults_injected": {key: value for key, value in asdict(outcome.faults).items() if value},
        "faults_met": {role.role: role.faults for role in outcome.roles if role.faults},
        "failed_items": sum(step.failed_items for step in outcome.steps),
        "steps": [{"step": step.step, "lm_calls": step.usage.calls, "seconds": round(step.seconds, 1),
                   "failed_items": step.failed_items} for step in outcome.steps],
        "roles": [{"role": role.role, "requests": role.sent.calls, "estimate_calls": role.estimate.calls
                   if role.estimate else None, "longest_prompt_tokens": role.longest_prompt_tokens,
                   "max_tokens": role.max_tokens, "context": role.context.tokens, "context_source": role.context.source,
                   "exceeds_context": role.context.tokens is not None
                   and role.longest_prompt_tokens + role.max_tokens > role.context.tokens}
                  for role in outcome.roles],
        "notes": outcome.notes, "error": outcome.error}


# ---- kill and resume ----

def kill_and_resume(scale: float, threads: int, work: Path) -> dict[str, Any]:
    """SynthesizeMe's rehearsal killed at half its estimated requests, its server killed and restarted at a quarter,
    then resumed; no fault injected, so that every test user must end up fitted."""
    name = SCALE_OUT_FILE
    test_users = scaled(PRISM_USERS["test"], scale)
    sent = estimates(name, test_users / PRISM_USERS["test"])["task"].calls
    log = work / "requests.log"
    started = time.perf_counter()
    server = InstantServerProcess(log).start()
    try:
        killed = start_rehearsal(name, scale, threads, work / "interrupted", server.url)
        wait_for_requests(log, sent // 4, killed)
        server.kill()
        server.start()  # the same port: the rehearsal's retries reach the new process
        wait_for_requests(log, sent // 2, killed)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        before_kill = read_log(log)
        resumed = run_rehearsal(name, scale, threads, work / "interrupted", server.url, "--resume")
    finally:
        server.kill()
    after = read_log(log)[len(before_kill):]
    answered_before = {body for _, body, status in before_kill if status == "200"}
    repeated = sum(1 for _, body, status in after if body in answered_before)
    fitted = fitted_users(work / "interrupted")
    return {"file": f"experiments/{name}.toml", "scale": scale, "threads": threads, "estimated_requests": sent,
            "server_restarted_after": sent // 4, "requests_before_kill": len(before_kill),
            "requests_after_resume": len(after), "bodies_answered_before_kill_sent_again": repeated,
            "repeats_allowed": threads, "no_answered_call_repeated_beyond_in_flight": repeated <= threads,
            "test_users": test_users, "users_fitted": len(fitted), "no_fitted_user_lost": len(fitted) == test_users,
            "failed_items_resumed": failed_items(resumed), "finished": resumed.returncode == 0,
            "wall_s": round(time.perf_counter() - started, 1)}


class InstantServerProcess:
    """`python -m prefcraft.experiments.rehearsal.instant_server` on a fixed loopback port, appending to `log`."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> InstantServerProcess:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "prefcraft.experiments.rehearsal.instant_server", "--port", str(self.port),
             "--request-log", str(self.log)], stdout=subprocess.PIPE, text=True, cwd=REPOSITORY)
        assert self.process.stdout is not None
        self.process.stdout.readline()  # its base URL: it is listening
        return self

    def kill(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def __enter__(self) -> InstantServerProcess:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.kill()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def rehearse_command(name: str, scale: float, threads: int, work: Path, url: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "prefcraft.commands.main", "experiment", "rehearse",
            str(EXPERIMENTS / f"{name}.toml"), "--scale", str(scale), "--threads", str(threads),
            "--work-dir", str(work), "--server-url", url, *extra]


def start_rehearsal(name: str, scale: float, threads: int, work: Path, url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(rehearse_command(name, scale, threads, work, url), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, text=True, cwd=REPOSITORY)


def run_rehearsal(name: str, scale: float, threads: int, work: Path, url: str,
                  *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(rehearse_command(name, scale, threads, work, url, *extra), capture_output=True, text=True,
                          cwd=REPOSITORY, check=False)


def wait_for_requests(log: Path, count: int, rehearsal: subprocess.Popen[str]) -> None:
    while len(read_log(log)) < count:
        if rehearsal.poll() is not None:
            raise RuntimeError(f"the rehearsal ended (status {rehearsal.returncode}) before {count} requests")
        time.sleep(0.05)


def read_log(log: Path) -> list[tuple[str, str, str]]:
    if not log.exists():
        return []
    return [tuple(line.split()) for line in log.read_text(encoding="utf-8").splitlines()  # type: ignore[misc]
            if line.count(" ") == 2]


def fitted_users(work: Path) -> set[str]:
    return {path.stem for path in (work / "runs" / SCALE_OUT_FILE / "fitted").glob("*.json")}


def failed_items(done: subprocess.CompletedProcess[str]) -> int | None:
    lines = [line for line in done.stdout.splitlines() if "failed items counted by the steps:" in line]
    return int(lines[-1].rsplit(" ", 1)[1].replace(",", "")) if lines else None


# ---- scale-out ----

def scale_out(scale: float, work: Path) -> list[dict[str, Any]]:
    """The same rehearsal with 1 endpoint, 2 endpoints and Ray: what each sent and fitted, beside the first. One
    thread per process (SCALE_OUT_THREADS): the fit's calls depend on the order its threads finish in."""
    rows, first_bodies = [], Counter[str]()
    for label, endpoints, executor in (("1 endpoint", 1, None), ("2 endpoints", 2, None), ("ray", 1, "ray")):
        folder, log = work / label.replace(" ", "-"), work / f"{label.replace(' ', '-')}.log"
        row = in_own_process({"path": str(EXPERIMENTS / f"{SCALE_OUT_FILE}.toml"), "scale": scale,
                              "threads": SCALE_OUT_THREADS, "work_dir": str(folder), "endpoints": endpoints,
                              "executor": executor, "request_log": str(log)})
        bodies = Counter(body for _, body, _ in read_log(log))
        first_bodies = first_bodies or bodies
        rows.append({"run": label, "requests": row["requests"],
                     "distinct_bodies": len(bodies), "bodies_shared_with_1_endpoint": sum((bodies & first_bodies)
                                                                                            .values()),
                     "users_fitted": len(fitted_users(folder)), "failed_items": row["failed_items"],
                     "wall_s": row["wall_s"], "requests_per_s": row["requests_per_s"], "error": row["error"]})
    return rows


if __name__ == "__main__":
    main()

"""`prefcraft experiment rehearse FILE`: a paper-scale experiment file run end to end on synthetic data
(`rehearsal.data`) against an instant server on loopback (`rehearsal.instant_server`), through the code path of
`prefcraft experiment run` (`run_experiment`), to measure what it costs before any GPU time is spent. A plumbing and
cost check: no number it gives is a score.

Every model role points at the server under a name of its own (`hosted_vllm/rehearsal-<role>`), keeping the file's
decoding (max_tokens, temperature, retries); the steps read the generated data; outputs, the DSPy cache and the MLflow
store go under the work folder. A dense retriever becomes BM25: the instant server serves no embeddings.

`Serving` says where the requests go: instant servers started here (one, or several that every role's model reaches
through litellm's Router, `api_bases`), or one already running in its own process (`--server-url`, the way to kill and
restart the server midway); and where the steps that take an executor run (`--executor ray`). A rehearsal killed
midway continues with `resume` in the same work folder: the same data, the DSPy cache (no answered call is sent again)
and the MLflow runs (`--resume`).
"""

from __future__ import annotations

import json
import logging
import resource
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefcraft.components.component import failed_items
from prefcraft.errors import ConfigError, PrefcraftError
from prefcraft.executors import Executor
from prefcraft.experiments.files import Experiment, experiment_settings, load_experiment, served_flag, vllm_serve_lines
from prefcraft.experiments.rehearsal.data import RehearsalData, reuse_or_write
from prefcraft.experiments.rehearsal.instant_server import Faults, InstantServer, ModelStats
from prefcraft.settings import SELF_HOSTED_PROVIDER, Role, Settings

logger = logging.getLogger(__name__)

ROLES: tuple[Role, ...] = ("task", "judge", "prompt")
COST_ESTIMATES = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "paper_scale_cost.json"
CONTEXT_FLAG = "--max-model-len"


class RehearsalError(PrefcraftError):
    """A step of a rehearsal raised: the run did not reach its end (the table says what it measured up to there)."""


def rehearsal_model_name(role: Role) -> str:
    """The model name a role's calls carry to the instant server, so that its counts tell the roles apart."""
    return f"rehearsal-{role}"


@dataclass(frozen=True)
class Serving:
    """Where a rehearsal's requests go, and where its steps run."""

    server_url: str | None = None
    """An instant server already running (`python -m prefcraft.experiments.rehearsal.instant_server`), used as it is
    (its own faults); None: started here."""
    endpoints: int = 1
    """How many instant servers to start here; with two or more, every role's model reaches them all (`api_bases`)."""
    executor: Executor | None = None
    """Given to the steps that take one, as `experiment run --executor` gives it."""
    address: str | None = None
    """The Ray cluster those steps join (default: a new local one)."""
    request_log: Path | None = None
    """The servers started here append a line per request to it (model, body hash, status)."""
    workers: int | None = None
    """How many processes those steps run in with the `processes` executor (default: one per CPU core)."""


@dataclass(frozen=True)
class Tokens:
    calls: int
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class RoleCost:
    """What the server saw of one role's model, beside the file's estimate and context for it."""

    role: str
    model: str
    """The file's model string for the role."""
    sent: Tokens
    """Requests the server answered or refused, and their approximate tokens."""
    longest_prompt_tokens: int
    max_tokens: int
    context: Context
    faults: dict[str, int]
    estimate: Tokens | None
    """The file's estimate (benchmarks/results/paper_scale_cost.json) times the share of the paper's size run."""


@dataclass(frozen=True)
class Context:
    tokens: int | None
    source: str
    """Where it comes from: the file's `vllm serve` line, the model's default, a hosted API's own."""


@dataclass(frozen=True)
class StepCost:
    step: str
    usage: Tokens
    """prefcraft's own accounting (`usage.metered`, as `run_experiment` logs it): answered calls, no cache hits."""
    seconds: float
    failed_items: int


@dataclass
class RehearsalOutcome:
    experiment: str
    path: Path
    scale: float
    work_dir: Path
    faults: Faults
    data: RehearsalData
    roles: list[RoleCost] = field(default_factory=list)
    steps: list[StepCost] = field(default_factory=list)
    wall_s: float = 0.0
    cpu_s: float = 0.0
    """This process's CPU seconds over the run: prefcraft's, and the instant server's threads'."""
    peak_rss_mib: float = 0.0
    cache_bytes: int = 0
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    """The unhandled error that stopped the run, as `type: message`; None when every step ran to the end."""

    @property
    def requests(self) -> int:
        return sum(role.sent.calls for role in self.roles)

    @property
    def cpu_ms_per_call(self) -> float | None:
        return 1000 * self.cpu_s / self.requests if self.requests else None


def rehearse(path: Path, scale: float, faults: Faults | None = None, *, work_dir: Path | None = None,
             threads: int | None = None, seed: int = 0, resume: bool = False, serving: Serving = Serving(),
             emit: Callable[[str], None] = logger.info) -> RehearsalOutcome:
    """Runs the experiment in `path` at the paper's size times `scale` on synthetic data and instant servers with
    `faults` (none by default), as `serving` says; the work folder (`work_dir`, else a temporary one, removed after)
    holds the data, outputs, cache and MLflow store, which `resume` continues from. An unhandled error is recorded in
    the outcome (`error`), with what was measured up to it."""
    from prefcraft.experiments.running import run_experiment  # the steps' code

    experiment, faults = load_experiment(path), faults or Faults()
    _check(serving, faults, work_dir, resume)
    with tempfile.TemporaryDirectory(prefix="prefcraft-rehearsal-") as temporary:
        work = (work_dir or Path(temporary)).resolve()
        data = reuse_or_write(experiment, work / "data", scale, seed)
        outcome = RehearsalOutcome(experiment.name, path, scale, work, faults, data)
        rehearsed, notes = rehearsal_experiment(experiment, data, work)
        outcome.notes += notes + _serving_notes(serving, resume)
        started, cpu_started = time.perf_counter(), _cpu_seconds()
        with instant_servers(faults, serving) as (base_urls, read_stats):
            settings = rehearsal_settings(rehearsed, base_urls, work, threads, resume)
            _create_store(settings, work)
            outcomes: list[Any] = []
            try:
                outcomes = run_experiment(path, rehearsed, settings, emit, executor=serving.executor,
                                          address=serving.address, workers=serving.workers)
            except Exception as error:  # the rehearsal's finding: reported, not raised
                logger.exception("rehearsal of %s stopped", path)
                outcome.error = f"{type(error).__name__}: {error}"
            stats = read_stats()
        outcome.wall_s = time.perf_counter() - started
        outcome.cpu_s = _cpu_seconds() - cpu_started
        outcome.peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        outcome.cache_bytes = _folder_bytes(settings.cache_dir)
        outcome.roles = role_costs(experiment, path.read_text(encoding="utf-8"), stats, data.share)
        outcome.steps = step_costs(settings, rehearsed, outcomes)
    return outcome


def _check(serving: Serving, faults: Faults, work_dir: Path | None, resume: bool) -> None:
    if resume and work_dir is None:
        raise ConfigError("--resume: continues the rehearsal in --work-dir; give the killed run's --work-dir")
    if serving.server_url and faults != Faults():
        raise ConfigError("--server-url: the running server injects its own faults",
                          "give --context-tokens, --error-rate and --cut-rate to the server instead")
    if serving.server_url and serving.endpoints != 1:
        raise ConfigError("--server-url and --endpoints: use a running server or start several, not both")
    if serving.endpoints < 1:
        raise ConfigError(f"--endpoints {serving.endpoints}: one or more")


def _serving_notes(serving: Serving, resume: bool) -> list[str]:
    notes = []
    if serving.server_url:
        notes.append(f"requests went to the running server {serving.server_url}: its counts since it started")
    if serving.endpoints > 1:
        notes.append(f"{serving.endpoints} instant servers, every role's model reaching them all (api_bases)")
    if serving.executor in ("processes", "ray"):
        notes.append(f"steps that take an executor ran in workers ({serving.executor}): their CPU time is not in this "
                     "process's")
    if resume:
        notes.append("resumed: the data, DSPy cache and MLflow runs of the work folder reused")
    return notes


StatsReader = Callable[[], dict[str, ModelStats]]


@contextmanager
def instant_servers(faults: Faults, serving: Serving) -> Iterator[tuple[list[str], StatsReader]]:
    """The base URLs the roles' models reach, and how to read what the servers saw (summed over them)."""
    if serving.server_url:
        yield [serving.server_url], lambda: remote_stats(serving.server_url or "")
        return
    names = [rehearsal_model_name(role) for role in ROLES]
    with ExitStack() as stack:
        servers = [stack.enter_context(InstantServer(faults, names, request_log=serving.request_log))
                   for _ in range(serving.endpoints)]
        yield [server.base_url for server in servers], lambda: summed_stats([server.stats() for server in servers])


def remote_stats(base_url: str) -> dict[str, ModelStats]:
    """A running instant server's counts (`GET /stats`); none when it cannot be reached."""
    try:
        with urllib.request.urlopen(f"{base_url.rstrip('/').removesuffix('/v1')}/stats", timeout=10) as reply:
            return {name: ModelStats(**counts) for name, counts in json.load(reply).items()}
    except (urllib.error.URLError, OSError):
        logger.warning("the server at %s did not answer /stats: no counts", base_url)
        return {}


def summed_stats(per_server: list[dict[str, ModelStats]]) -> dict[str, ModelStats]:
    total: dict[str, ModelStats] = {}
    for stats in per_server:
        for name, seen in stats.items():
            into = total.setdefault(name, ModelStats())
            into.requests += seen.requests
            into.prompt_tokens += seen.prompt_tokens
            into.completion_tokens += seen.completion_tokens
            into.longest_prompt_tokens = max(into.longest_prompt_tokens, seen.longest_prompt_tokens)
            for kind, count in seen.faults.items():
                into.faults[kind] = into.faults.get(kind, 0) + count
    return total


def rehearsal_experiment(experiment: Experiment, data: RehearsalData, work: Path) -> tuple[Experiment, list[str]]:
    """The experiment with its steps reading the generated data and writing under `work`; and what was changed
    beyond the paths, in words."""
    steps, notes = {}, []
    for step, given in experiment.steps.items():
        options = {name: _under(work, value) for name, value in given.items()}
        options |= data.options.get(step, {})
        if options.get("retriever") == "dense":
            options |= {"retriever": "bm25", "embedding_model": None, "embedding_api_base": None}
            notes.append(f"{step}: the dense retriever ran as bm25 (the instant server serves no embeddings)")
        steps[step] = options
    return experiment.model_copy(update={"steps": steps}), notes


def _under(work: Path, value: Any) -> Any:
    """A relative path the file names (an output, a download) as the same path under `work`."""
    return work / value if isinstance(value, Path) and not value.is_absolute() else value


def rehearsal_settings(experiment: Experiment, base_urls: list[str], work: Path, threads: int | None,
                       resume: bool = False) -> Settings:
    """The file's settings with every role it sets (task always) at the instant servers under its own name (one
    api_base, or api_bases for several), keeping its decoding; nothing served by prefcraft; the cache and the MLflow
    store under `work`."""
    given = experiment.settings.model_dump(exclude_unset=True)
    endpoints = {"api_base": base_urls[0], "api_bases": []} if len(base_urls) == 1 else \
        {"api_base": None, "api_bases": base_urls}
    roles = {role: {"model": f"{SELF_HOSTED_PROVIDER}{rehearsal_model_name(role)}", **endpoints, "api_key_env": None}
             for role in ROLES if role == "task" or role in given}
    overrides = {**roles, "serve": False, "cache_dir": work / "cache",
                 "mlflow_experiment": f"rehearsal-{experiment.name}",
                 "tracking_uri": f"sqlite:///{work / 'mlflow.db'}", "resume": resume, "trace": False,
                 **({"threads": threads} if threads else {})}
    return experiment_settings(experiment, None, overrides)


def _create_store(settings: Settings, work: Path) -> None:
    """The MLflow experiment, its artifacts under `work` (a new experiment's default is ./mlruns)."""
    import mlflow

    mlflow.set_tracking_uri(settings.tracking_uri)
    if mlflow.get_experiment_by_name(settings.mlflow_experiment) is None:
        mlflow.create_experiment(settings.mlflow_experiment, artifact_location=(work / "artifacts").as_uri())


def role_costs(experiment: Experiment, text: str, stats: dict[str, ModelStats], share: float) -> list[RoleCost]:
    """Per role the file sets, what the server saw, beside its context and the file's cost estimate."""
    estimated = estimates(experiment.name, share)
    costs = []
    for role in ROLES:
        seen = stats.get(rehearsal_model_name(role))
        if seen is None and role != "task" and getattr(experiment.settings, role) is None:
            continue
        seen = seen or ModelStats(0, 0, 0, 0, {})
        model = experiment.settings.model_for(role)
        costs.append(RoleCost(role, model.model, Tokens(seen.requests, seen.prompt_tokens, seen.completion_tokens),
                              seen.longest_prompt_tokens, model.max_tokens, served_context(text, model.model),
                              seen.faults, estimated.get(role)))
    return costs


def estimates(name: str, share: float) -> dict[str, Tokens]:
    """The cost file's estimate for the experiment, per role, times `share`; none where it has none."""
    paper = json.loads(COST_ESTIMATES.read_text(encoding="utf-8"))["papers"].get(name) if COST_ESTIMATES.exists() \
        else None
    totals: dict[str, list[float]] = {}
    for part in (paper or {}).get("parts", []):
        sums = totals.setdefault(part["model"], [0, 0, 0])
        for index, key in enumerate(("calls", "prompt_tokens", "completion_tokens")):
            sums[index] += part[key] * share
    return {role: Tokens(*(round(value) for value in sums)) for role, sums in totals.items()}


def served_context(text: str, model: str) -> Context:
    """The context the file's `vllm serve` line for `model` gives (--max-model-len), the model's default where the
    line sets none, or a hosted API's own for a model no line serves."""
    if not model.startswith(SELF_HOSTED_PROVIDER):
        return Context(None, "hosted API: its own context")
    name = model.removeprefix(SELF_HOSTED_PROVIDER)
    try:
        context = served_flag(vllm_serve_lines(text), CONTEXT_FLAG, name)
    except LookupError:
        return Context(None, "no `vllm serve` line in the file")
    if context is None:
        return Context(None, "unset: the model's default")
    return Context(int(context), f"serve {CONTEXT_FLAG}")


def step_costs(settings: Settings, experiment: Experiment, outcomes: list[Any]) -> list[StepCost]:
    """Each step that ran: the usage and seconds `run_experiment` logged to MLflow for it, and the failed items its
    outcome counted (a step that raised has no outcome: it is left out)."""
    metrics = _experiment_metrics(settings, experiment.name)
    costs = []
    for step, outcome in zip(experiment.steps, outcomes, strict=False):
        key = step.replace("-", "_")
        usage = Tokens(*(int(metrics.get(f"{key}_{name}", 0)) for name in
                         ("lm_calls", "prompt_tokens", "completion_tokens")))
        costs.append(StepCost(step, usage, metrics.get(f"{key}_seconds", 0.0), failed_items(outcome)))
    return costs


def _experiment_metrics(settings: Settings, name: str) -> dict[str, float]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(settings.tracking_uri)
    store = client.get_experiment_by_name(settings.mlflow_experiment)
    if store is None:
        return {}
    runs = client.search_runs([store.experiment_id], f"tags.`mlflow.runName` = 'experiment:{name}'",
                              order_by=["attributes.start_time DESC"], max_results=1)
    return dict(runs[0].data.metrics) if runs else {}


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _folder_bytes(folder: Path) -> int:
    return sum(file.stat().st_size for file in folder.rglob("*") if file.is_file()) if folder.exists() else 0

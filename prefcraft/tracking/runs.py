"""MLflow glue: every command that compiles or evaluates is one run (child runs per user), with DSPy autologging.

A run that raises is ended with status FAILED by `mlflow.start_run`'s context manager, one stopped by Ctrl-C or
SIGTERM with status KILLED; whatever was logged stays.
With `--resume` the next run of the same command and params continues it instead of opening a new one. Whether to
resume is the `Tracker`'s (from the settings); when a run was resumed is a tag of that run, which its child runs read.
"""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from prefcraft.files import jsonl_appender, write_jsonl_atomic, write_text_atomic
from prefcraft.settings import Settings

if TYPE_CHECKING:
    from prefcraft.engine.usage import UsageMeter

logger = logging.getLogger(__name__)

MAX_PARAM_CHARS = 500
SHOWN_PARAM_CHARS = 40
RESUMED_TAG = "prefcraft.resumed"
RESUMED_AT_TAG = "prefcraft.resumed_at"  # when (ms) the last resume began: its children older than that are replaced
INTERRUPTED = ("FAILED", "KILLED", "RUNNING")  # RUNNING: a process killed hard never ended its run
IGNORED_TAG = "prefcraft.resume_ignored"  # + ".<param>": a param that changes no result, changed on resuming
RESULT_NEUTRAL = ("num_threads", "display_progress", "progress")  # how a command runs, not what it computes


class Tracker(Protocol):
    """Where a step's runs, metrics and files go."""

    def run(self, name: str, params: Mapping[str, Any] | None = None, *,
            nested: bool = False) -> AbstractContextManager[Any]: ...

    def log_metrics(self, metrics: Mapping[str, float]) -> None: ...

    def log_file(self, path: Path) -> None: ...

    def log_program(self, path: Path, name: str, request: dict[str, str] | None, metadata: Mapping[str, Any],
                    promote_as: str | None) -> str | None:
        """Log the compiled JSON at `path` as a model (`model_registry.log_program`); its URI, the registered alias's
        when promoted, or None where nothing is tracked."""


class MLflowTracker:
    """MLflow runs in the settings' store and experiment (`start_tracking`); a top-level run resumes an interrupted one
    when `resume` is set (`--resume`)."""

    def __init__(self, resume: bool = False) -> None:
        self.resume = resume

    def run(self, name: str, params: Mapping[str, Any] | None = None, *,
            nested: bool = False) -> AbstractContextManager[Any]:
        return tracked_run(name, params, nested=nested, resume=self.resume)

    def log_metrics(self, metrics: Mapping[str, float]) -> None:
        log_metrics(metrics)

    def log_file(self, path: Path) -> None:
        log_file(path)

    def log_program(self, path: Path, name: str, request: dict[str, str] | None, metadata: Mapping[str, Any],
                    promote_as: str | None) -> str | None:
        from prefcraft.tracking.models import log_program

        logged = log_program(path, name=name, request=request, metadata=metadata, promote_as=promote_as)
        return logged.alias_uri or logged.model_uri


class _NotTracked:
    """The tracker of a step that MLflow does not track: its runs are no runs, and nothing is logged."""

    def run(self, name: str, params: Mapping[str, Any] | None = None, *,
            nested: bool = False) -> AbstractContextManager[Any]:
        return nullcontext()

    def log_metrics(self, metrics: Mapping[str, float]) -> None:
        pass

    def log_file(self, path: Path) -> None:
        pass

    def log_program(self, path: Path, name: str, request: dict[str, str] | None, metadata: Mapping[str, Any],
                    promote_as: str | None) -> str | None:
        return None


NOT_TRACKED = _NotTracked()


def start_tracking(settings: Settings) -> MLflowTracker:
    """Point MLflow at the settings' store and experiment, with DSPy autologging; the tracker for the step's runs."""
    import mlflow

    mlflow.set_tracking_uri(settings.tracking_uri)
    mlflow.set_experiment(settings.mlflow_experiment)
    # Autolog patches compile/Evaluate and must run in the thread that owns DSPy's settings (the main thread).
    # Traces only when asked (`trace`): written span by span into the store, they cost more CPU than the LM calls
    # themselves and grow the store with every call (benchmarks/client_overhead.py).
    # No traces from evaluations: their wrapper turns a metric that raises into a None score, which dspy.Evaluate
    # cannot add up, so one unparseable judge reply would fail the whole evaluation instead of that example.
    mlflow.dspy.autolog(
        log_traces=settings.trace, log_compiles=True, log_evals=True, log_traces_from_compile=False,
        log_traces_from_eval=False, silent=True,
    )
    return MLflowTracker(settings.resume)


@contextmanager
def tracked_run(
    name: str, params: Mapping[str, Any] | None = None, *, nested: bool = False, resume: bool = False
) -> Iterator[Any]:
    """A run; one started while another is active (a command inside a tour or an experiment) nests under it.

    With `resume` a top-level run continues the newest run called `name` if that one was interrupted and logged the
    same params (those that change no result aside); otherwise it starts anew and says why. Inside a resumed run, a
    child run replaces the child of the same name that the interrupted attempt left.
    """
    import mlflow

    logged = {key: _param_value(value) for key, value in (params or {}).items()}
    nested = nested or mlflow.active_run() is not None
    resumed = _interrupted_run(name, logged) if resume and not nested else None
    if nested:
        _drop_earlier_child(name)
    with mlflow.start_run(run_id=resumed and resumed.info.run_id, run_name=name, nested=nested) as run:
        if resumed:
            mlflow.set_tags({RESUMED_TAG: int(run.data.tags.get(RESUMED_TAG, 0)) + 1,
                             RESUMED_AT_TAG: int(time.time() * 1000)})
            ignored = {key: value for key, value in logged.items() if resumed.data.params.get(key, value) != value}
            mlflow.set_tags({f"{IGNORED_TAG}.{key}": value for key, value in ignored.items()})
            logged = {key: value for key, value in logged.items() if key not in ignored}
        if logged:
            mlflow.log_params(logged)
        try:
            yield run
        except (KeyboardInterrupt, SystemExit):
            mlflow.end_run("KILLED")  # stopped by Ctrl-C or a signal: nothing failed
            raise
        from prefcraft.engine.lm import EndpointFaults  # DSPy: loaded once a run has started, not by `prefcraft --help`

        if (fault := EndpointFaults.error()) is not None:
            raise fault  # its failed calls were scored as 0: the run failed


def _interrupted_run(name: str, params: Mapping[str, str]) -> Any:
    """The newest top-level run called `name` if it was interrupted with the same `params`, else None.

    Params are compared as MLflow stores them; ones the old run has beyond `params` (DSPy autologging's) don't count,
    nor do those that change no result (RESULT_NEUTRAL): the log names those that changed.
    """
    import mlflow

    runs = mlflow.search_runs(filter_string=f"tags.mlflow.runName = {name!r} AND tags.mlflow.parentRunId IS NULL",
                              order_by=["attributes.start_time DESC"], max_results=1, output_format="list")
    if not runs or runs[0].info.status not in INTERRUPTED:
        last = f" (run {runs[0].info.run_id} finished)" if runs else ""
        logger.warning("nothing to resume for %s%s; starting a new run", name, last)
        return None
    run = runs[0]
    old = run.data.params
    changes = {key: f"{key} changed ({_param_value(old.get(key, 'unset'), SHOWN_PARAM_CHARS)} -> "
               f"{_param_value(value, SHOWN_PARAM_CHARS)})" for key, value in params.items() if old.get(key) != value}
    changed = [change for key, change in changes.items() if not _result_neutral(key)]
    if changed:
        logger.warning("not resuming run %s: %s; starting a new run", run.info.run_id, ", ".join(changed))
        return None
    ignored = [change for key, change in changes.items() if _result_neutral(key)]
    logger.info("resuming run %s (%s)%s", run.info.run_id, name,
                f"; ignoring what changes no result: {', '.join(ignored)}" if ignored else "")
    return run


def _result_neutral(key: str) -> bool:
    return any(key == neutral or key.endswith(f"_{neutral}") for neutral in RESULT_NEUTRAL)


def _drop_earlier_child(name: str) -> None:
    """Delete the child called `name` that a resumed run's interrupted attempt left, before a new one replaces it."""
    import mlflow

    parent = mlflow.active_run()
    resumed_at = parent and mlflow.get_run(parent.info.run_id).data.tags.get(RESUMED_AT_TAG)
    if resumed_at is None:
        return
    earlier = mlflow.search_runs(
        filter_string=f"tags.mlflow.runName = {name!r} AND tags.mlflow.parentRunId = {parent.info.run_id!r} "
        f"AND attributes.start_time < {resumed_at}",
        output_format="list",
    )
    for child in earlier:
        mlflow.delete_run(child.info.run_id)


def log_metrics(metrics: Mapping[str, float]) -> None:
    import mlflow

    mlflow.log_metrics(dict(metrics))


@contextmanager
def logged_usage(tracker: Tracker | StepTracker) -> Iterator[UsageMeter]:
    """`metered()`, whose calls and tokens are logged to the tracker's run once the block has filled them in, when it
    fails too: a failed run still shows what it cost."""
    from prefcraft.engine.usage import metered  # DSPy's usage tracker: loaded by a step that calls a model

    with ExitStack() as stack:
        stack.callback(lambda: tracker.log_metrics(meter.usage.as_metrics()))
        meter = stack.enter_context(metered())
        yield meter


class StepTracker:
    """What a step's work records in the run the runner opened for it (`prefcraft.runner`): a child run per item
    (a user, a method, an inferrer), metrics, result files and compiled programs. It opens no run of its own: a step
    declares its run's name and params (`Step.run_name`, `StepCode.params`), and the runner opens that run."""

    def __init__(self, tracker: Tracker) -> None:
        self._tracker = tracker

    def child(self, name: str, params: Mapping[str, Any] | None = None) -> AbstractContextManager[Any]:
        """A child run of the step's run, for one item; a resumed run's child replaces the one its interrupted
        attempt left."""
        return self._tracker.run(name, params, nested=True)

    def log_metrics(self, metrics: Mapping[str, float]) -> None:
        self._tracker.log_metrics(metrics)

    def log_file(self, path: Path) -> None:
        """A file the step wrote by other means (a fitted judge), logged to its current run."""
        self._tracker.log_file(path)

    def log_program(self, path: Path, name: str, request: dict[str, str] | None, metadata: Mapping[str, Any],
                    promote_as: str | None) -> str | None:
        return self._tracker.log_program(path, name, request, metadata, promote_as)

    def write_results(self, path: Path, rows: Iterable[Any]) -> Path:
        """Result rows, written once: a JSONL file (atomically), logged to the current run."""
        written = write_jsonl_atomic(path, rows)
        self._tracker.log_file(written)
        return written

    @contextmanager
    def results_appender(self, path: Path) -> Iterator[Callable[[Iterable[Any]], None]]:
        """Result rows appended as the work yields them (`prefcraft.files.jsonl_appender`): the JSONL file appears
        when the block ends, and is then logged to the run that is current."""
        with jsonl_appender(path) as append:
            yield append
        self._tracker.log_file(path)

    def write_json(self, path: Path, obj: Any) -> Path:
        """A result that is one object (a summary), as a JSON file written atomically and logged to the current run."""
        written = write_text_atomic(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")
        self._tracker.log_file(written)
        return written

    def log_json(self, obj: Any, artifact_name: str) -> None:
        log_json(self._tracker, obj, artifact_name)


def log_json(tracker: Tracker, obj: Any, artifact_name: str) -> None:
    """`obj` as a JSON file called `artifact_name`, logged to the tracker's run: what a run logs beside its result
    files."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / artifact_name
        path.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
        tracker.log_file(path)


def log_file(path: Path) -> None:
    import mlflow

    mlflow.log_artifact(str(path))


def model_params(settings: Settings) -> dict[str, Any]:
    """What a run needs to say about its models: a served one by its server, not its per-run address. Never the keys."""
    params: dict[str, Any] = {}
    for role in ("task", "prompt", "judge"):
        model = settings.model_for(role)
        params[f"{role}_model"] = model.model
        params[f"{role}_api_base"] = settings.endpoint(role)
        params[f"{role}_temperature"] = model.temperature
        if model.top_p is not None:
            params[f"{role}_top_p"] = model.top_p
        params[f"{role}_max_tokens"] = model.max_tokens
        params[f"{role}_structured_output"] = settings.dialect(role)
    return params


def data_digest(source: str | Path) -> str:
    """sha256 (first 16 hex) of a local data file; the name itself for a hub dataset. A file is read once per size and
    modification time: a step's run params and its work both name the digest."""
    path = Path(source)
    if not path.is_file():
        return str(source)
    stat = path.stat()
    return _file_digest(path.resolve(), stat.st_size, stat.st_mtime_ns)


@cache
def _file_digest(path: Path, size: int, mtime_ns: int) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()[:16]


def _param_value(value: Any, limit: int = MAX_PARAM_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."

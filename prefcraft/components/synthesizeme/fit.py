"""`prefcraft synthesizeme fit`: SynthesizeMe per user, one compiled JSON per user, resumable; in the run the runner
opens (`fit-synthesizeme`, its params `fit_params`), one MLflow child run per user."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from prefcraft.backends.counters import PromptCache, metered_prompt_cache
from prefcraft.components.component import StepRun
from prefcraft.components.synthesizeme.evaluation import PERSONAL_JUDGE
from prefcraft.components.synthesizeme.judge_sets import ValidationOrders, fit_sets
from prefcraft.components.synthesizeme.options import FitOptions, FittedOptions, demo_cap
from prefcraft.engine.item_failures import failure_reason, is_item_failure
from prefcraft.engine.lm import EndpointFaults, cache_directory, check_reachable
from prefcraft.engine.session import lm_context, run_in_worker
from prefcraft.errors import PrefcraftError
from prefcraft.executors import ExecutorOptions, map_in_workers
from prefcraft.files import path_in
from prefcraft.loaders.personal_reward_bench import VAL_FRACTION, UserPairs, judge_examples, train_val_split
from prefcraft.optimizers.artifacts import load_compiled, read_metadata, save_compiled, shipped_compiled
from prefcraft.optimizers.synthesizeme import CANDIDATE_DRAWS, FitRecord, SynthesizeMe, SynthesizeMeConfig
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.persona import PersonaSynthesizer
from prefcraft.settings import ModelSettings, Settings, SmallModelProfile
from prefcraft.tracking.models import input_example, registered_name
from prefcraft.tracking.runs import StepTracker, data_digest, model_params

logger = logging.getLogger(__name__)

PERSONA_SYNTHESIZER = "persona_synthesizer"
PROGRAMS = {PERSONAL_JUDGE: lambda metadata: PreferenceJudge(),
            PERSONA_SYNTHESIZER: lambda metadata: PersonaSynthesizer()}
"""The programs a compiled file names, built fresh (`prefcraft.load`)."""


@dataclass
class FitSummary:
    fitted: dict[str, Path] = field(default_factory=dict)
    resumed: dict[str, Path] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    """Users refused before or during their fit for their data (fewer than 2 context pairs, ...), with the reason."""
    failed: dict[str, str] = field(default_factory=dict)
    """Users whose fit a model call ended (a prompt over the server's context length, an answer that did not parse),
    with the reason: the other users' fits went on."""

    @property
    def judges(self) -> dict[str, Path]:
        return {**self.resumed, **self.fitted}

    @property
    def failed_items(self) -> int:
        return len(self.failed)

    @property
    def not_fitted(self) -> int:
        """The users this fit left without a judge: a run with any is incomplete."""
        return len(self.skipped) + len(self.failed)


@dataclass(frozen=True)
class FitFailure:
    """Why a model call ended one user's fit; returned rather than raised, so that it crosses a Ray worker too."""

    reason: str


def default_persona_prompt(model: str) -> Path | None:
    """The shipped compiled persona prompt for `model`, if prefcraft ships one (see compiled/index.json)."""
    path = shipped_compiled(PERSONA_SYNTHESIZER, model)
    if path is None:
        logger.info("no compiled persona prompt ships for %s; using the uncompiled one", model)
    return path


def load_persona_synthesizer(path: Path | None) -> tuple[PersonaSynthesizer, str]:
    """The compiled persona prompt at `path`, or the uncompiled synthesizer when `path` is None; with its source
    (`persona_prompt_source`)."""
    synthesizer = PersonaSynthesizer()
    if path is not None:
        load_compiled(synthesizer, path, program_name=PERSONA_SYNTHESIZER)
    return synthesizer, persona_prompt_source(path)


def persona_prompt_source(path: Path | None) -> str:
    """What a fit's run and its fitted files say its persona prompt was: the path, or `uncompiled`."""
    return "uncompiled" if path is None else str(path)


@dataclass
class UserFit:
    """What one user's fit needs, picklable so that a Ray worker can run it: DSPy settings do not cross processes."""

    user: UserPairs
    synthesizer: PersonaSynthesizer
    config: SynthesizeMeConfig
    val_orders: ValidationOrders
    model: ModelSettings
    """The task model, at an endpoint the workers reach."""


@dataclass
class WorkerFit:
    """A user's fit sent to a Ray worker, with the driver's DSPy disk cache: a rerun repeats no answered call."""

    fit: UserFit
    cache_dir: Path
    profile: SmallModelProfile | None


def fit(options: FitOptions, run: StepRun) -> FitSummary:
    """Every user of `--data` (`load_users` read them) fitted with the options' search."""
    return fit_users(run, options, run.loaded, options.search_config(run.session))


def fit_params(options: FittedOptions, run: StepRun) -> dict[str, Any]:
    """The params of the `fit-synthesizeme` run, which the runner opens around `fit_users` (for `demo` too): the data,
    its users (`load_users` read them), the persona prompt, the validation and the options' search, the models."""
    session, users = run.session, run.loaded
    config = capped(session, options.search_config(session))
    persona_prompt = options.persona_prompt or shipped_compiled(  # the work looks it up again, and warns then
        PERSONA_SYNTHESIZER, session.task.model, warn=False)
    return {"program": PERSONAL_JUDGE, "data": str(options.source), "data_digest": data_digest(options.source),
            "population": options.population, "users": len(users),
            "persona_prompt": persona_prompt_source(persona_prompt), "val_fraction": VAL_FRACTION,
            "val_orders": options.val_orders, **asdict(config), **model_params(session)}


def capped(session: Settings, config: SynthesizeMeConfig) -> SynthesizeMeConfig:
    """`config`, without `max_demos` given the small-model profile's when the profile is on (`demo_cap`)."""
    return replace(config, max_demos=demo_cap(session, config.max_demos))


def fit_users(
    run: StepRun, options: FittedOptions, users: dict[str, UserPairs], config: SynthesizeMeConfig
) -> FitSummary:
    """Fit every user of `users` not fitted yet, here (`local`), in worker processes of this machine (`processes`) or
    as Ray tasks (`ray`, on the cluster at the options' address), in the run the caller opened (`fit-synthesizeme`,
    its params `fit_params`).

    Either way the driver writes each user's JSON into the options' `fitted_dir` and one MLflow child run per user. A
    config without `max_demos` gets the small-model profile's when the profile is on (`demo_cap`).
    """
    session, tracker = run.session, run.tracker
    config = capped(session, config)
    digest = data_digest(options.source)
    summary = FitSummary()
    persona_prompt = options.persona_prompt or default_persona_prompt(session.task.model)
    synthesizer, prompt_source = load_persona_synthesizer(persona_prompt)
    metadata = {"data_digest": digest, "model": session.task.model, "persona_prompt": prompt_source,
                "optimizer": fit_settings(config, options.val_orders)}  # what a fitted file must match to be resumed
    with lm_context(session, "task"):
        fits = {}
        for user_id, user in users.items():
            path = fitted_path(options.fitted_dir, user_id)
            reason = _refit_reason(path, {"user_id": user_id, **metadata})
            if reason is None:
                summary.resumed[user_id] = path
                continue
            if path.is_file():
                logger.warning("refitting %s: %s", user_id, reason)
            fits[user_id] = UserFit(user, synthesizer, config, options.val_orders, session.task)
        finish = _FitWriter(session, tracker, options.fitted_dir, summary, metadata)
        if options.executor != "local":
            cache_dir = cache_directory(run.settings)  # model_session's, keyed before any server started
            _fit_in_workers([WorkerFit(fit, cache_dir, session.small_model_profile()) for fit in fits.values()],
                            finish, options)
        else:
            _fit_here(fits, finish)
        tracker.log_metrics({"users_fitted": len(summary.fitted), "users_resumed": len(summary.resumed),
                             "users_skipped": len(summary.skipped), "users_failed": len(summary.failed)})
    return summary


def compile_judge(fit: UserFit) -> PreferenceJudge:
    """SynthesizeMe on one user, on the model of the current DSPy context; the judge carries its `fit_record`."""
    trainset, valset = fit_sets(*train_val_split(fit.user), fit.val_orders, fit.config.seed)
    return SynthesizeMe(fit.synthesizer, fit.config).compile(PreferenceJudge(), trainset=trainset, valset=valset)


def attempt_fit(fit: UserFit) -> PreferenceJudge | FitFailure:
    """`compile_judge`, or the failed model call that ended it (`is_item_failure`); a PrefcraftError (the user's data
    refused) and any other error still raise."""
    try:
        return compile_judge(fit)
    except PrefcraftError:
        raise
    except Exception as error:
        if not is_item_failure(error):
            raise
        return FitFailure(failure_reason(error))


def compile_judge_in_worker(job: WorkerFit) -> PreferenceJudge | FitFailure | str:
    """A worker's task (a process or a Ray task): `attempt_fit` on a model built in this process, or why the user
    cannot be fitted."""
    return run_in_worker(attempt_fit, job.fit, model=job.fit.model, cache_dir=job.cache_dir, profile=job.profile)


def _fit_here(fits: dict[str, UserFit], finish: _FitWriter) -> None:
    for user_id, fit in tqdm(fits.items(), desc="fitting users", unit="user"):
        try:
            with finish.tracker.child(user_id, {"user_id": user_id}):
                with metered_prompt_cache(fit.model.api_base) as server:
                    judge = attempt_fit(fit)
                finish.record(fit.user, judge, server.usage)
        except PrefcraftError as error:
            if not is_item_failure(error):  # a server gone, or a call that timed out: the command ends
                raise
            finish.skip(user_id, str(error))


def _fit_in_workers(jobs: list[WorkerFit], finish: _FitWriter, where: ExecutorOptions) -> None:
    # Users fit at the same time, so no server's prompt-cache counters can be told apart per user.
    finished = map_in_workers(compile_judge_in_worker, jobs, where)
    for job, judge in tqdm(finished, total=len(jobs), desc=f"fitting users ({where.executor})", unit="user"):
        user_id = job.fit.user.user_id
        if isinstance(judge, str):
            finish.skip(user_id, judge)
            continue
        with finish.tracker.child(user_id, {"user_id": user_id}):
            finish.record(job.fit.user, judge, None)


@dataclass
class _FitWriter:
    """What the driver does with each user's outcome: the JSON, the child run's metrics, the summary."""

    session: Settings
    tracker: StepTracker
    output_dir: Path
    summary: FitSummary
    metadata: dict[str, object]

    def record(self, user: UserPairs, judge: PreferenceJudge | FitFailure, prompt_cache: PromptCache | None) -> None:
        """The user's judge saved, or its failure recorded."""
        if isinstance(judge, FitFailure):
            self.fail(user.user_id, judge.reason)
        else:
            self.save(user, judge, prompt_cache)

    def save(self, user: UserPairs, judge: PreferenceJudge, prompt_cache: PromptCache | None) -> None:
        """The user's judge saved, and logged as the `champion` of the user's registered model: a fit has no ship
        gate, so the newest fit is the one the user's judge is."""
        record, user_id = judge.fit_record, user.user_id
        if any(record.failed_calls.values()):
            check_reachable(self.session.task, "task")  # calls failed because the server died: not a fit
            if (fault := EndpointFaults.error()) is not None:
                raise fault  # calls timed out: not a fit either, and nothing saved that --resume would take for one
        path = fitted_path(self.output_dir, user_id)
        save_compiled(judge, path, program_name=PERSONAL_JUDGE, user_id=user_id, persona=record.persona,
                      score={"val_accuracy": record.val_accuracy}, record=asdict(record), **self.metadata)
        self.tracker.log_metrics({**_record_metrics(record), **(prompt_cache.as_metrics() if prompt_cache else {})})
        pairs = user.val or user.train
        request = input_example(judge_examples(pairs[0])[0]) if pairs else None
        self.tracker.log_program(path, PERSONAL_JUDGE, request, {"user_id": user_id, **self.metadata},
                                 registered_name(PERSONAL_JUDGE, self.session.task.model, user_id))
        self.summary.fitted[user_id] = path

    def skip(self, user_id: str, reason: str) -> None:
        check_reachable(self.session.task, "task")
        logger.warning("skipping user %s: %s", user_id, reason)
        self.summary.skipped[user_id] = reason

    def fail(self, user_id: str, reason: str) -> None:
        check_reachable(self.session.task, "task")  # a server that died fails every user: that ends the run
        logger.warning("the fit of user %s failed (the other users' fits go on): %s", user_id, reason)
        self.tracker.log_metrics({"fit_failed": 1.0})
        self.summary.failed[user_id] = reason


def fitted_path(output_dir: Path, user_id: str) -> Path:
    """Where `fit` keeps a user's judge: `<output_dir>/<user_id>.json` for an id that is a plain file name, else a file
    named after the id's safe form (`safe_name`). Whatever a data row says its user is, the file is in `output_dir`."""
    return path_in(output_dir, user_id, ".json")


def fit_settings(config: SynthesizeMeConfig, val_orders: ValidationOrders) -> dict[str, object]:
    """The settings that change a fit's result: the split, the validation orders (`val_orders`), the candidates' draws
    and the optimizer's (threads only change its speed). The orders stay under the key `validation`, as fitted files
    already hold them: a file fitted before the option's rename is still resumed."""
    optimizer = {name: value for name, value in asdict(config).items() if name != "num_threads"}
    return {"val_fraction": VAL_FRACTION, "validation": val_orders, "candidate_draws": CANDIDATE_DRAWS, **optimizer}


def _refit_reason(path: Path, expected: dict[str, object]) -> str | None:
    """Why the fitted file at `path` cannot be reused for a fit with `expected` metadata; None if it can."""
    if not path.is_file():
        return "not fitted yet"
    try:
        metadata = read_metadata(path)
    except PrefcraftError as error:
        return f"unreadable ({error})"
    changed = [f"{key} {metadata.get(key)!r} -> {value!r}" for key, value in expected.items()
               if metadata.get(key) != value]
    return "changed " + "; ".join(changed) if changed else None


def _record_metrics(record: FitRecord) -> dict[str, float]:
    metrics = {"val_accuracy": record.val_accuracy, "verified_pairs": float(record.verified_pairs),
               "demos": float(record.demos), "failed_calls": float(sum(record.failed_calls.values())),
               **record.total_usage.as_metrics()}
    for step, usage in record.usage.items():
        metrics.update(usage.as_metrics(f"{step}_"))
    return metrics

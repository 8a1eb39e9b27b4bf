"""`prefcraft synthesizeme evaluate`: judge a split's pairs in both orders with one or more judges; pooled and
per-user accuracy.

Methods (SynthesizeMe's Table 3 rows): `baseline` (no user context: the paper's Default; `default` is taken for one
release); `demographics` (Dong et al.'s judge told the user's PRISM survey profile; users without one are left out of
it); `memory` (insights from each context pair's conversation, appended in order);
from the user's fitted JSON: `demos` (the step-1 demos, no persona), `persona` (the persona, no demos) and
`synthesizeme` (persona + searched demos).

The runner opens the `evaluate` run (its params `evaluate_params`); the judgments, metrics and one child run per user
are recorded in it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import dspy
from tqdm import tqdm

from prefcraft.backends.counters import PromptCache, metered_prompt_cache
from prefcraft.components.component import StepRun
from prefcraft.components.synthesizeme.options import DemographicsJudge, EvaluateOptions, FittedOptions, JudgedOptions
from prefcraft.components.synthesizeme.population import load_population
from prefcraft.components.synthesizeme.profiles import PRISM_SURVEY, load_profiles
from prefcraft.engine.evaluation import judge_pairs
from prefcraft.engine.item_failures import failure_reason, is_item_failure
from prefcraft.engine.lm import cache_directory, check_reachable
from prefcraft.engine.session import lm_context, run_in_worker
from prefcraft.engine.usage import LMUsage, metered
from prefcraft.errors import ConfigError, PrefcraftError
from prefcraft.executors import ExecutorOptions, map_in_workers
from prefcraft.files import safe_name
from prefcraft.loaders.personal_reward_bench import UserPairs, format_conversation, group_by_user, judge_set
from prefcraft.metrics.pairwise import Judgment, PairwiseReport, pairwise_report
from prefcraft.optimizers.artifacts import load_compiled, read_metadata
from prefcraft.programs.judge import PreferenceJudge, ProfileJudge
from prefcraft.programs.memory import MemoryBuilder
from prefcraft.settings import ModelSettings, Settings, SmallModelProfile
from prefcraft.tracking.runs import StepTracker, data_digest, model_params

logger = logging.getLogger(__name__)

PERSONAL_JUDGE = "personal_judge"
METHODS = ("baseline", "demographics", "memory", "demos", "persona", "synthesizeme")
NEEDS_FIT = {"demos", "persona", "synthesizeme"}
BUILT_WITH_MODEL = {"memory"}  # methods whose judge takes model calls to build: built where the user is judged
LEARNS_FROM_CONTEXT = NEEDS_FIT | {"memory"}  # methods shown each user's train and val pairs with their labels
MEMORY_HEADING = "What is known about this user from their past interactions"
DEMOGRAPHICS_HEADING = "The user's demographic profile"
DEMOGRAPHICS_HINT = (f"give the PRISM survey ({PRISM_SURVEY}, config survey) or a local copy of it: --demographics "
                     "on the command line, demographics= in prefcraft.evaluate")


@dataclass
class MethodOutcome:
    report: PairwiseReport
    usage: LMUsage
    judgments: list[Judgment]
    prompt_cache: PromptCache | None = None
    """Prompt tokens the server evaluated and served from its cache (llama.cpp's server only)."""
    users: int = 0
    """The users judged, those of `failures` included."""
    failures: dict[str, str] = field(default_factory=dict)
    """Users whose judge could not be built (a memory call over the context length, ...), with the reason: each of
    their judgments counts as failed, hence wrong, as the reference scores a call that fails."""

    @property
    def failed_items(self) -> int:
        return len(self.failures)


@dataclass
class UserJudged:
    """One user's judgments by one method, the LM usage, and why its judge could not be built (then every judgment
    failed)."""

    judgments: list[Judgment]
    usage: LMUsage
    failure: str | None = None


@dataclass
class UserJudging:
    """One user's `split` pairs to judge with one method, picklable so that a Ray worker can run it."""

    method: str
    user: UserPairs
    split: str
    judge: PreferenceJudge | ProfileJudge | None
    """The method's judge for this user, built by the driver (from the fitted file, the profile); None for the
    methods in BUILT_WITH_MODEL."""
    model: ModelSettings
    """The task model, at an endpoint the workers reach."""
    num_threads: int


@dataclass
class WorkerJudging:
    """A user's judging sent to a Ray worker, with the driver's DSPy disk cache: a rerun repeats no answered call."""

    judging: UserJudging
    cache_dir: Path
    profile: SmallModelProfile | None


@dataclass
class Selection:
    """What an evaluation judges, read and checked before any model starts."""

    users: dict[str, UserPairs]
    """The users selected, less those without a fitted judge when a method needs one."""
    fitted: dict[str, Path]
    """Each user's fitted judge."""
    profiles: dict[str, str]
    """Each user's demographic profile."""
    demographics_judge: DemographicsJudge = "dong"
    """The demographics method's judge (`judge_for`)."""
    methods: tuple[str, ...] = ()
    """The methods it judges with (`select_judged`)."""

    def users_of(self, method: str) -> dict[str, UserPairs]:
        """The users `method` judges: for demographics, those with a profile."""
        if method != "demographics":
            return self.users
        return {user_id: user for user_id, user in self.users.items() if user_id in self.profiles}


def select_users(users: dict[str, UserPairs], wanted: Sequence[str] | None) -> dict[str, UserPairs]:
    if not wanted:
        return users
    unknown = sorted(set(wanted) - set(users))
    if unknown:
        raise ConfigError(f"unknown user ids: {', '.join(unknown)}", f"known: {', '.join(sorted(users)[:10])} ...")
    return {user_id: users[user_id] for user_id in wanted}


def load_users(options: FittedOptions | JudgedOptions) -> dict[str, UserPairs]:
    """The pairs of the users a step fits or judges (of its population, then its `users`), before any model
    starts."""
    return select_users(group_by_user(load_population(options.source, options.population)), options.selected_users)


def load_personal_judge(path: str | Path) -> tuple[PreferenceJudge, dict[str, object]]:
    judge = PreferenceJudge()
    metadata = load_compiled(judge, path, program_name=PERSONAL_JUDGE)
    return judge, metadata


def judge_for(
    method: str, user: UserPairs, fitted: Path | None, profile: str | None = None,
    demographics_judge: DemographicsJudge = "dong",
) -> PreferenceJudge | ProfileJudge:
    """`method`'s judge for `user`: demographics is Dong et al.'s prompt (`dong`, the paper's) or the baseline
    judge with the profile in its instructions (`persona_judge`)."""
    if method == "baseline":
        return PreferenceJudge()
    if method == "demographics":
        if not profile:
            raise ConfigError(f"user {user.user_id} has no demographic profile", DEMOGRAPHICS_HINT)
        if demographics_judge == "dong":
            return ProfileJudge(profile)
        return PreferenceJudge(profile, heading=DEMOGRAPHICS_HEADING)
    if method == "memory":
        memory = MemoryBuilder()(interactions=memory_interactions(user)).memory
        return PreferenceJudge(memory, heading=MEMORY_HEADING)
    if fitted is None:
        raise ConfigError(f"method {method} needs a fitted user", "run `prefcraft synthesizeme fit` first")
    judge, metadata = load_personal_judge(fitted)
    if method == "persona":
        return PreferenceJudge(str(metadata["persona"]))
    if method == "demos":
        judge = PreferenceJudge()
        judge.demos = [dspy.Example(**demo) for demo in metadata["record"]["evidence_demos"]]
    return judge


def memory_interactions(user: UserPairs) -> list[dict[str, str]]:
    """Each context pair's conversation, oldest first: the memory reads the conversations alone, as the paper's."""
    return [{"conversation": format_conversation(pair.context)} for pair in user.context_pairs]


def load_evaluated(options: EvaluateOptions) -> Selection:
    """What `evaluate` judges (`select_judged`), the fitted judges in `--fitted-dir` and the profiles of
    `--demographics` read before any model starts."""
    fitted = {path.stem: path for path in sorted(options.fitted_dir.glob("*.json"))}
    profiles = load_profiles(options.demographics) if options.demographics else {}
    return select_judged(options, options.methods, fitted, profiles, options.demographics_judge)


def evaluate(options: EvaluateOptions, run: StepRun) -> dict[str, MethodOutcome]:
    return evaluate_methods(run, options, run.loaded)


def evaluate_params(options: JudgedOptions, run: StepRun) -> dict[str, Any]:
    """The params of the `evaluate` run, which the runner opens around `evaluate_methods` (for `demo` too): the methods
    and the users of what it judges (`run.loaded`, a `Selection`), the data, the split, the models."""
    selection: Selection = run.loaded
    return {"methods": ",".join(selection.methods), "data": str(options.source),
            "data_digest": data_digest(options.source), "population": options.population, "split": options.split,
            "allow_fitted_pairs": options.allow_fitted_pairs, "users": len(selection.users),
            **model_params(run.session)}


def select_judged(
    options: JudgedOptions, methods: Sequence[str], fitted: dict[str, Path], profiles: dict[str, str],
    demographics_judge: DemographicsJudge = "dong",
) -> Selection:
    """The users `methods` judge, each with its judge fitted on the options' data (`fitted`, keyed by user id or by the
    stem of its file) and its demographic profile (`profiles`).

    Raises ConfigError, before any model starts, for a judge fitted on other data, and for methods that learned from
    the split's pairs (train, val) unless `allow_fitted_pairs`.
    """
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        raise ConfigError(f"unknown methods: {', '.join(unknown)}", f"choose from {', '.join(METHODS)}")
    _check_split(methods, options.split, options.allow_fitted_pairs)
    users = load_users(options)
    if set(methods) & NEEDS_FIT:
        users, fitted = _with_fitted_judges(users, fitted, options.source)
    selection = Selection(users, fitted, profiles, demographics_judge, tuple(methods))
    if "demographics" in methods:
        with_profile = selection.users_of("demographics")
        if not with_profile:
            raise ConfigError(f"no demographic profile for any of the {len(selection.users)} selected user(s)",
                              f"{DEMOGRAPHICS_HINT}; its user ids must match the data's")
        missing = sorted(set(selection.users) - set(with_profile))
        if missing:
            logger.warning("no demographic profile for %d user(s), left out of demographics: %s", len(missing), missing)
    return selection


def evaluate_methods(run: StepRun, options: JudgedOptions, selection: Selection) -> dict[str, MethodOutcome]:
    """Judge each selected user's pairs of the options' split with each of the selection's methods: here, method
    after method and user after user (`local`), or each user and method as a task of a worker process (`processes`) or
    of Ray (`ray`, on the cluster at the options' address). Either way the driver writes each method's judgments, its
    metrics and one MLflow child run per user, in the run the caller opened (`evaluate`, its params
    `evaluate_params`), and the outcomes are the same."""
    session, tracker, methods = run.session, run.tracker, selection.methods
    outcomes: dict[str, MethodOutcome] = {}
    with lm_context(session, "task"):

        def judgings(method: str) -> Iterable[UserJudging]:  # lazily: each judge is loaded when its turn comes
            for user in selection.users_of(method).values():
                judge = None if method in BUILT_WITH_MODEL else judge_for(
                    method, user, selection.fitted.get(user.user_id), selection.profiles.get(user.user_id),
                    selection.demographics_judge)
                yield UserJudging(method, user, options.split, judge, session.task, session.threads)

        def finish(method: str, outcome: MethodOutcome) -> None:
            outcomes[method] = outcome
            # each method's results as soon as they exist: a later failure keeps them
            path = tracker.write_results(options.output_dir / f"judgments-{method}.jsonl",
                                         map(asdict, outcome.judgments))
            logger.info("wrote %d judgments to %s", len(outcome.judgments), path)
            cache_metrics = outcome.prompt_cache.as_metrics(f"{method}_") if outcome.prompt_cache else {}
            tracker.log_metrics({**outcome.report.as_metrics(f"{method}_"), **outcome.usage.as_metrics(f"{method}_"),
                                 **cache_metrics, f"{method}_users": outcome.users,
                                 f"{method}_users_failed": len(outcome.failures)})

        if options.executor != "local":
            cache_dir = cache_directory(run.settings)  # model_session's, keyed before any server started
            jobs = {method: list(judgings(method)) for method in methods}  # every judge loaded before any task
            _evaluate_in_workers(jobs, session, cache_dir, options, finish)
            outcomes = {method: outcomes[method] for method in methods}
        else:
            for method in methods:
                finish(method, _evaluate_here(method, judgings(method), len(selection.users_of(method)), session))
        _log_per_user(tracker, outcomes)
    return outcomes


def _check_split(methods: Sequence[str], split: str, allow_fitted_pairs: bool) -> None:
    learned = [method for method in methods if method in LEARNS_FROM_CONTEXT]
    if split == "test" or not learned:
        return
    if not allow_fitted_pairs:
        raise ConfigError(
            f"{', '.join(learned)} learned from each user's train and val pairs: scoring them on split '{split}' "
            "would score them on pairs they have seen",
            "evaluate on --split test, or pass --allow-fitted-pairs to score them on these pairs anyway",
        )
    logger.warning("scoring %s on split %r, pairs they learned from: expect optimistic accuracy",
                   ", ".join(learned), split)


def _with_fitted_judges(
    users: dict[str, UserPairs], fitted: dict[str, Path], data: str | Path
) -> tuple[dict[str, UserPairs], dict[str, Path]]:
    """The users with a judge fitted on `data`, and each one's judge; raises ConfigError for a judge fitted on other
    data."""
    digest = data_digest(data)
    found = {user_id: path for user_id in users if (path := fitted_judge_path(fitted, user_id)) is not None}
    missing = sorted(set(users) - set(found))
    if missing:
        logger.warning("no fitted judge for %d user(s), left out of every method: %s", len(missing), missing)
    users = {user_id: user for user_id, user in users.items() if user_id in found}
    for user_id in users:
        fitted_digest = read_metadata(found[user_id]).get("data_digest")
        if fitted_digest != digest:
            raise ConfigError(
                f"{found[user_id]} was fitted on data with digest {fitted_digest}, not on {data} (digest {digest})",
                "fit the users on this data with `prefcraft synthesizeme fit`, or point --fitted-dir at judges fitted "
                "on it",
            )
    return users, found


def fitted_judge_path(fitted: dict[str, Path], user_id: str) -> Path | None:
    """`user_id`'s judge in `fitted`, which is keyed by user id or by the stems of a fitted directory's files (`fit`
    names a file after the id's `safe_name`). A file whose metadata names another user is not this user's judge."""
    for key in dict.fromkeys((user_id, safe_name(user_id))):
        path = fitted.get(key)
        if path is None:
            continue
        owner = read_metadata(path).get("user_id")
        if owner is None or owner == user_id:
            return path
        logger.warning("%s holds the judge of user %r, not of %r: not used for %r", path, owner, user_id, user_id)
    return None


def judge_user(job: UserJudging) -> UserJudged:
    """One user's pairs judged in both orders by one method, on the model of the current DSPy context; with the LM
    usage of building the judge (memory) and of judging. A judge whose building failed (`is_item_failure`) fails
    each of the user's judgments; a failed judgment call is a failed judgment (`judge_pairs`)."""
    with metered() as meter:
        try:
            judge = job.judge if job.judge is not None else judge_for(job.method, job.user, None)
        except Exception as error:
            if not is_item_failure(error):
                raise
            return UserJudged(failed_judgments(job), meter.usage, failure_reason(error))
    judgments, usage = judge_pairs(judge, getattr(job.user, job.split), model=job.model, num_threads=job.num_threads,
                                   progress=False)
    return UserJudged(judgments, meter.usage + usage)


def failed_judgments(job: UserJudging) -> list[Judgment]:
    """Every judgment of the user's pairs, both orders, as failed: no answer, wrong."""
    return [Judgment(example.user_id, example.pair_id, example.order, None, False)
            for example in judge_set(getattr(job.user, job.split))]


def judge_user_in_worker(job: WorkerJudging) -> UserJudged | str:
    """A worker's task (a process or a Ray task): `judge_user` on a model built in this process, or why the user could
    not be judged."""
    return run_in_worker(judge_user, job.judging, model=job.judging.model, cache_dir=job.cache_dir,
                         profile=job.profile)


def _method_outcome(
    judged: Iterable[tuple[str, UserJudged]], session: Settings, prompt_cache: PromptCache | None
) -> MethodOutcome:
    """One method's outcome from its users' judgments, usage and failures, in the order of its users."""
    judgments: list[Judgment] = []
    usage = LMUsage()
    failures: dict[str, str] = {}
    users = 0
    for user_id, user in judged:
        users += 1
        judgments += user.judgments
        usage += user.usage
        if user.failure is not None:
            logger.warning("the judge of user %s could not be built; each of its judgments counts as wrong: %s",
                           user_id, user.failure)
            failures[user_id] = user.failure
    return MethodOutcome(pairwise_report(judgments, seed=session.seed), usage, judgments, prompt_cache, users,
                         failures)


def _evaluate_here(method: str, jobs: Iterable[UserJudging], users: int, session: Settings) -> MethodOutcome:
    with metered_prompt_cache(session.task.api_base) as server:
        judged = [(job.user.user_id, judge_user(job))
                  for job in tqdm(jobs, total=users, desc=f"evaluating {method}", unit="user")]
    return _method_outcome(judged, session, server.usage)


def _evaluate_in_workers(
    jobs: dict[str, list[UserJudging]], session: Settings, cache_dir: Path, where: ExecutorOptions,
    finish: Callable[[str, MethodOutcome], None],
) -> None:
    """Every user and method as a worker's task (`map_in_workers`); each method is finished as soon as its last user
    is judged. Methods run at the same time, so no server's prompt-cache counters can be told apart per method."""
    judged: dict[str, dict[str, UserJudged]] = {method: {} for method in jobs}

    def finish_if_done(method: str) -> None:
        if len(judged[method]) == len(jobs[method]):
            users = [job.user.user_id for job in jobs[method]]
            finish(method, _method_outcome(((user, judged[method][user]) for user in users), session, None))

    for method in jobs:
        if not jobs[method]:
            finish_if_done(method)
    profile = session.small_model_profile()
    work = [WorkerJudging(job, cache_dir, profile) for method_jobs in jobs.values() for job in method_jobs]
    finished = map_in_workers(judge_user_in_worker, work, where)
    for item, result in tqdm(finished, total=len(work), desc=f"evaluating ({where.executor})", unit="user"):
        method, user_id = item.judging.method, item.judging.user.user_id
        if isinstance(result, str):  # judge_user returns a UserJudged for the user's own failures: this is the worker's
            check_reachable(session.task, "task")  # the calls failed because the server died: say that
            raise PrefcraftError(f"evaluating {method} for user {user_id} failed: {result}")
        judged[method][user_id] = result
        finish_if_done(method)


def _log_per_user(tracker: StepTracker, outcomes: dict[str, MethodOutcome]) -> None:
    users = sorted({user for outcome in outcomes.values() for user in outcome.report.per_user})
    for user_id in users:
        with tracker.child(user_id, {"user_id": user_id}):
            tracker.log_metrics({f"{method}_accuracy": outcome.report.per_user[user_id].mean
                                 for method, outcome in outcomes.items() if user_id in outcome.report.per_user})

"""`prefcraft synthesizeme compile-persona`: an optimizer (MIPROv2 by default) over the persona synthesizer's prompt,
once, over training users, then the ship gate every compile goes through (`prefcraft.optimizers.compile_gate`).

A compiled prompt that beats the uncompiled one on the validation users, saved under compiled/persona_synthesizer/, is
registered in compiled/index.json and becomes the default persona prompt of every `prefcraft synthesizeme fit` on the
same task model; one that does not is saved to the requested output too, its verdict in its metadata, and never
registered. The runner opens the `compile-persona` run around it (its params `compile_persona_params`).
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tqdm import tqdm

from prefcraft.components.component import StepRun
from prefcraft.components.synthesizeme.evaluation import select_users
from prefcraft.components.synthesizeme.fit import PERSONA_SYNTHESIZER
from prefcraft.components.synthesizeme.judge_sets import ValidationOrders, fit_sets
from prefcraft.components.synthesizeme.options import CompilePersonaOptions
from prefcraft.engine.lm import build_lm
from prefcraft.engine.session import lm_context
from prefcraft.errors import ConfigError, PrefcraftError, ServerError
from prefcraft.loaders.personal_reward_bench import (
    VAL_FRACTION,
    UserPairs,
    group_by_user,
    judge_set,
    load_pairs,
    train_val_split,
)
from prefcraft.optimizers.compile_selection import CompileVerdict
from prefcraft.optimizers.compile_step import (
    CompileStep,
    ModelAccess,
    compile_params,
    metered_compile,
    optimize_and_gate,
)
from prefcraft.optimizers.options import optimizer_config
from prefcraft.optimizers.persona_prompt import PersonaMetric, default_judge_baselines, persona_examples
from prefcraft.optimizers.prompt_optimizer import OptimizerConfig
from prefcraft.optimizers.synthesizeme import PersonaEvidence, SynthesizeMe
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.persona import PersonaSynthesizer
from prefcraft.settings import Settings
from prefcraft.tracking.runs import StepTracker, data_digest

logger = logging.getLogger(__name__)

Users = dict[str, UserPairs]


def load_persona_users(options: CompilePersonaOptions) -> tuple[Users, Users]:
    """The training and the validation users' pairs, before any model starts."""
    if set(options.train_users) & set(options.val_users):
        raise ConfigError("training and validation users overlap", "give disjoint --train-users and --val-users")
    users = group_by_user(load_pairs(options.source))
    train, val = select_users(users, options.train_users), select_users(users, options.val_users)
    if options.persona_metric == "improvement" and (untargeted := [u for u, pairs in {**train, **val}.items()
                                                                    if not pairs.test]):
        raise ConfigError(f"{options.source}: user(s) {', '.join(untargeted)} have no target (test) pairs, which the "
                          "improvement metric scores personas on", "choose users with test pairs, or give "
                          "--persona-metric accuracy (each user's validation pairs)")
    return train, val


def compile_persona_params(options: CompilePersonaOptions, run: StepRun) -> dict[str, Any]:
    """The params of the `compile-persona` run, which the runner opens around `compile_persona` (`compile_params`):
    the persona synthesizer, the data, the training and validation users (`load_persona_users` read them), the persona
    metric, the fits' search, the optimizer's settings and the models."""
    train, val = run.loaded
    session = run.session
    params = {"data": str(options.source), "data_digest": data_digest(options.source), "train_users": ",".join(train),
              "val_users": ",".join(val), "persona_metric": options.persona_metric,
              "fit_val_fraction": VAL_FRACTION, "fit_val_orders": options.val_orders,
              **{f"fit_{key}": value for key, value in asdict(options.search_config(session)).items()}}
    return compile_params(session, PERSONA_SYNTHESIZER, persona_optimizer_config(options, session), params)


def compile_persona(options: CompilePersonaOptions, run: StepRun) -> CompileVerdict:
    """The persona evidence of the training and validation users (`load_persona_users`), then the optimizer over the
    persona prompt and the ship gate (`select_persona_prompt`), on the task model with its usage metered; the optimizer
    runs with the settings' seed."""
    train, val = run.loaded
    session, tracker = run.session, run.tracker
    fit_config = options.search_config(session)
    prompt_config = persona_optimizer_config(options, session)
    with metered_compile(session, tracker, ModelAccess(build_lm, lm_context)):
        fitter = SynthesizeMe(PersonaSynthesizer(), fit_config)
        train_evidence, val_evidence = (_collect_evidence(fitter, users, options.val_orders) for users in (train, val))
        score = persona_metric(options, {**train, **val}, [*train_evidence, *val_evidence])
        return select_persona_prompt(
            session, tracker, train_evidence, val_evidence, prompt_config, score, options.output,
            data_digest=data_digest(options.source), train_users=list(train), val_users=list(val),
            metric=METRIC_DESCRIPTIONS[options.persona_metric],
        )  # fmt: skip


# A persona is a bootstrapped demo when it improves on the baseline judge at all (an improvement is a multiple of one
# over the user's judgments, so any above 0 reaches this), or when its judge is right on half the judgments.
METRIC_THRESHOLDS = {"improvement": 1e-9, "accuracy": 0.5}
METRIC_DESCRIPTIONS = {
    "improvement": "the persona judge's accuracy on the user's target pairs, both orders, less the baseline judge's",
    "accuracy": "the persona judge's accuracy on the user's validation pairs, both orders",
}


def persona_optimizer_config(options: CompilePersonaOptions, session: Settings) -> OptimizerConfig:
    """The optimizer's config; its bootstrapping threshold (where it has one) `--metric-threshold` when given, else
    the persona metric's own (`METRIC_THRESHOLDS`)."""
    return optimizer_config(options, session, metric_threshold=METRIC_THRESHOLDS[options.persona_metric])


def persona_metric(options: CompilePersonaOptions, users: Users, evidence: list[PersonaEvidence]) -> PersonaMetric:
    """The metric `--persona-metric` names, over the users whose evidence was collected; the improvement's baselines
    (the baseline judge on each user's target pairs) are judged here, once."""
    if options.persona_metric == "accuracy":
        return PersonaMetric({prepared.user_id: prepared.val_examples for prepared in evidence})
    scored = {prepared.user_id: judge_set(users[prepared.user_id].test) for prepared in evidence}
    return PersonaMetric(scored, default_judge_baselines(scored))


def select_persona_prompt(
    session: Settings, tracker: StepTracker, train: list[PersonaEvidence], val: list[PersonaEvidence],
    prompt_config: OptimizerConfig, score: PersonaMetric, output: Path, **metadata: Any,
) -> CompileVerdict:
    """The optimizer over the persona prompt, then the ship gate (`optimize_and_gate`): the compiled prompt is saved to
    `output` with its verdict and its trial count, and registered (inside compiled/) only when its personas score
    better by `score` on the validation users than the uncompiled prompt's. Its demos stay as the optimizer chose
    them."""
    step = CompileStep(PERSONA_SYNTHESIZER, PersonaSynthesizer, prompt_config, output,
                       {"prompt_model": session.model_for("prompt").model, **metadata},
                       prompt_demos_only=False, count_trials=True)
    return optimize_and_gate(session, tracker, step, score, persona_examples(train), persona_examples(val),
                             ModelAccess(build_lm, lm_context))


def _collect_evidence(
    fitter: SynthesizeMe, users: dict[str, UserPairs], val_orders: ValidationOrders
) -> list[PersonaEvidence]:
    evidence = []
    for user_id, user in tqdm(users.items(), desc="collecting persona evidence", unit="user"):
        try:
            trainset, valset = fit_sets(*train_val_split(user), val_orders, fitter.config.seed)
            evidence.append(fitter.collect_evidence(PreferenceJudge(), trainset=trainset, valset=valset))
        except ServerError:
            raise
        except PrefcraftError as error:
            logger.warning("leaving user %s out of the compile: %s", user_id, error)
    if not evidence:
        raise ConfigError("no usable users to compile the persona prompt on")
    return evidence

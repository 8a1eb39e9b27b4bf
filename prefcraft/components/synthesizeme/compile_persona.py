"""`prefcraft synthesizeme compile-persona`: an optimizer (MIPROv2 by default) over the persona synthesizer's prompt,
once, over training users.

Saved under compiled/persona_synthesizer/ (and listed in compiled/index.json) it becomes the default persona prompt
of every `prefcraft synthesizeme fit` on the same task model.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path

from tqdm import tqdm

from prefcraft.components.synthesizeme.evaluation import select_users
from prefcraft.components.synthesizeme.fit import PERSONA_SYNTHESIZER
from prefcraft.errors import ConfigError, PrefcraftError, ServerError
from prefcraft.lm import build_lm
from prefcraft.loaders.personal_reward_bench import (
    VAL_FRACTION,
    UserPairs,
    group_by_user,
    judge_set,
    load_pairs,
    train_val_split,
)
from prefcraft.optimizers.artifacts import register_compiled, save_compiled
from prefcraft.optimizers.persona_prompt import compile_persona_prompt
from prefcraft.optimizers.prompt_optimizer import BootstrapRSConfig, OptimizerConfig
from prefcraft.optimizers.synthesizeme import PersonaEvidence, SynthesizeMe, SynthesizeMeConfig
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.persona import PersonaSynthesizer
from prefcraft.runtime import check_servers, lm_context, model_session
from prefcraft.settings import Settings
from prefcraft.tracking import data_digest, log_metrics, logged_usage, model_params, start_tracking, tracked_run

logger = logging.getLogger(__name__)


def compile_persona(
    settings: Settings, data: str | Path, output: Path, *, train_users: Sequence[str], val_users: Sequence[str],
    fit_config: SynthesizeMeConfig, prompt_config: OptimizerConfig,
) -> Path:
    """The optimizer runs with `settings.seed`, whatever `prompt_config.seed` says."""
    if set(train_users) & set(val_users):
        raise ConfigError("training and validation users overlap", "give disjoint --train-users and --val-users")
    if not isinstance(prompt_config, BootstrapRSConfig):  # DSPy's random search takes no seed
        prompt_config = replace(prompt_config, seed=settings.seed)
    users = group_by_user(load_pairs(data))
    train, val = select_users(users, train_users), select_users(users, val_users)
    with model_session(settings) as session:
        start_tracking(session)
        params = {"program": PERSONA_SYNTHESIZER, "data": str(data), "data_digest": data_digest(data),
                  "train_users": ",".join(train), "val_users": ",".join(val), **prompt_config.as_params(),
                  "fit_val_fraction": VAL_FRACTION,
                  **{f"fit_{key}": value for key, value in asdict(fit_config).items()}, **model_params(session)}
        with tracked_run("compile-persona", params), lm_context(session, "task"), logged_usage():
            fitter = SynthesizeMe(PersonaSynthesizer(), fit_config)
            train_evidence, val_evidence = _collect_evidence(fitter, train), _collect_evidence(fitter, val)
            compiled = compile_persona_prompt(
                train_evidence, val_evidence, prompt_config,
                prompt_model=build_lm(session.model_for("prompt")), task_model=build_lm(session.task),
            )  # fmt: skip
            check_servers(session)  # the optimizer scores a failed call as 0: no program chosen on a dead server
            record = compiled.compile_record
            save_compiled(
                compiled, output, program_name=PERSONA_SYNTHESIZER, model=session.task.model,
                prompt_model=session.model_for("prompt").model, data_digest=data_digest(data),
                train_users=list(train), val_users=list(val),
                score={"val_judge_accuracy": record.validation_score / 100}, optimizer=prompt_config.as_params(),
                trials=len(record.trial_logs),
            )  # fmt: skip
            log_metrics({"val_judge_accuracy": record.validation_score / 100})
    register_compiled(PERSONA_SYNTHESIZER, session.task.model, output)
    return output


def _collect_evidence(fitter: SynthesizeMe, users: dict[str, UserPairs]) -> list[PersonaEvidence]:
    evidence = []
    for user_id, user in tqdm(users.items(), desc="collecting persona evidence", unit="user"):
        try:
            train, val = train_val_split(user)
            evidence.append(fitter.collect_evidence(PreferenceJudge(), trainset=judge_set(train),
                                                    valset=judge_set(val)))
        except ServerError:
            raise
        except PrefcraftError as error:
            logger.warning("leaving user %s out of the compile: %s", user_id, error)
    if not evidence:
        raise ConfigError("no usable users to compile the persona prompt on")
    return evidence

"""`prefcraft synthesizeme compile-persona`: an optimizer (MIPROv2 by default) over the persona synthesizer's prompt,
once, over training users, then the ship gate every compile goes through (`prefcraft.compile_gate`).

A compiled prompt that beats the uncompiled one on the validation users, saved under compiled/persona_synthesizer/, is
registered in compiled/index.json and becomes the default persona prompt of every `prefcraft synthesizeme fit` on the
same task model; one that does not is saved as `persona_synthesizer.rejected.json` beside the requested output.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from prefcraft.compile_gate import MLflowTracker, Tracker, keep_if_better, logged_usage
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
from prefcraft.optimizers.compile_selection import CompileVerdict
from prefcraft.optimizers.persona_prompt import PersonaMetric, compile_persona_prompt, persona_examples
from prefcraft.optimizers.prompt_optimizer import BootstrapRSConfig, OptimizerConfig
from prefcraft.optimizers.synthesizeme import PersonaEvidence, SynthesizeMe, SynthesizeMeConfig
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.persona import PersonaSynthesizer
from prefcraft.runtime import lm_context, model_session
from prefcraft.settings import Settings
from prefcraft.tracking import data_digest, model_params, start_tracking

logger = logging.getLogger(__name__)


def compile_persona(
    settings: Settings, data: str | Path, output: Path, *, train_users: Sequence[str], val_users: Sequence[str],
    fit_config: SynthesizeMeConfig, prompt_config: OptimizerConfig,
) -> CompileVerdict:
    """The optimizer runs with `settings.seed`, whatever `prompt_config.seed` says."""
    if set(train_users) & set(val_users):
        raise ConfigError("training and validation users overlap", "give disjoint --train-users and --val-users")
    if not isinstance(prompt_config, BootstrapRSConfig):  # DSPy's random search takes no seed
        prompt_config = replace(prompt_config, seed=settings.seed)
    users = group_by_user(load_pairs(data))
    train, val = select_users(users, train_users), select_users(users, val_users)
    with model_session(settings) as session:
        start_tracking(session)
        tracker = MLflowTracker()
        params = {"program": PERSONA_SYNTHESIZER, "data": str(data), "data_digest": data_digest(data),
                  "train_users": ",".join(train), "val_users": ",".join(val), **prompt_config.as_params(),
                  "fit_val_fraction": VAL_FRACTION,
                  **{f"fit_{key}": value for key, value in asdict(fit_config).items()}, **model_params(session)}
        with tracker.run("compile-persona", params), lm_context(session, "task"), logged_usage(tracker):
            fitter = SynthesizeMe(PersonaSynthesizer(), fit_config)
            train_evidence, val_evidence = _collect_evidence(fitter, train), _collect_evidence(fitter, val)
            return select_persona_prompt(
                session, tracker, train_evidence, val_evidence, prompt_config, output, data_digest=data_digest(data),
                train_users=list(train), val_users=list(val),
            )  # fmt: skip


def select_persona_prompt(
    session: Settings, tracker: Tracker, train: list[PersonaEvidence], val: list[PersonaEvidence],
    prompt_config: OptimizerConfig, output: Path, **metadata: Any,
) -> CompileVerdict:
    """The optimizer over the persona prompt, then the ship gate (`keep_if_better`): the compiled prompt is saved to
    `output` (and registered, inside compiled/) only when the persona judge scores better on the validation users with
    it than with the uncompiled prompt; else it is saved beside `output` as `persona_synthesizer.rejected.json`."""
    compiled = compile_persona_prompt(train, val, prompt_config, prompt_model=build_lm(session.model_for("prompt")),
                                      task_model=build_lm(session.task))
    return keep_if_better(
        session, tracker, compiled=compiled, uncompiled=PersonaSynthesizer(), valset=persona_examples(val),
        score=PersonaMetric([*train, *val]), program_name=PERSONA_SYNTHESIZER, output=output,
        rejected_dir=output.parent, prompt_model=session.model_for("prompt").model,
        metric="the persona judge's accuracy on the user's validation pairs, both orders",
        optimizer=prompt_config.as_params(), trials=len(compiled.compile_record.trial_logs), **metadata,
    )  # fmt: skip


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

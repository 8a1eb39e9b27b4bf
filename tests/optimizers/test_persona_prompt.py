"""MIPROv2 over the persona prompt: a real compile, tiny budget, on the embedded model."""

import dspy
import pytest
from dspy.utils import DummyLM

from prefcraft.engine.lm import build_adapter, build_lm
from prefcraft.loaders.personal_reward_bench import judge_set, train_val_split
from prefcraft.optimizers.artifacts import load_compiled, save_compiled
from prefcraft.optimizers.persona_prompt import (
    PersonaMetric,
    compile_persona_prompt,
    persona_examples,
)
from prefcraft.optimizers.prompt_optimizer import MIPROv2Config
from prefcraft.optimizers.synthesizeme import SynthesizeMe, SynthesizeMeConfig
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.programs.persona import PersonaSynthesizer
from prefcraft.settings import SmallModelProfile


def test_examples_carry_only_the_past_judgments_as_input(pair, user_with):
    from prefcraft.optimizers.synthesizeme import PersonaEvidence

    evidence = PersonaEvidence("u1", [], [], [], [], [], None, {})
    (example,) = persona_examples([evidence])
    assert set(example.inputs().keys()) == {"past_judgments"}
    assert example.user_id == "u1"


class SeededError(Exception):
    def __init__(self, seed: int):
        self.seed = seed


class StopWhenSeeded(dspy.MIPROv2):
    """The real optimizer, stopped where compile() seeds its random generators, before any model call."""

    def _set_random_seeds(self, seed: int) -> None:
        raise SeededError(seed)


@pytest.mark.parametrize("seed", [0, 7])
def test_mipro_samples_with_the_configured_seed(monkeypatch, seed):
    from prefcraft.optimizers.synthesizeme import PersonaEvidence

    monkeypatch.setattr(dspy, "MIPROv2", StopWhenSeeded)
    evidence = [PersonaEvidence("u1", [], [], [], [], [], None, {})]
    lm = DummyLM([])
    with pytest.raises(SeededError) as caught:
        compile_persona_prompt(evidence, evidence, MIPROv2Config(seed=seed), PersonaMetric({"u1": []}),
                               prompt_model=lm, task_model=lm)
    assert caught.value.seed == seed


@pytest.mark.server
def test_real_mipro_compile_returns_a_saved_and_reloadable_persona_prompt(embedded_model, user_with, tmp_path):
    fit_config = SynthesizeMeConfig(num_persona_subsets=2, num_demo_candidates=2, num_threads=2)
    users = [user_with(3, 2, short_wins=i % 2 == 0, user_id=f"u{i}") for i in range(3)]
    config = MIPROv2Config(num_candidates=2, num_trials=2, max_bootstrapped_demos=1, max_labeled_demos=1,
                           num_threads=2)
    lm = build_lm(embedded_model)
    with dspy.context(lm=lm, adapter=build_adapter(embedded_model, SmallModelProfile())):
        fitter = SynthesizeMe(PersonaSynthesizer(), fit_config)
        splits = [train_val_split(user) for user in users]
        evidence = [fitter.collect_evidence(PreferenceJudge(), trainset=judge_set(train), valset=judge_set(val))
                    for train, val in splits]
        metric = PersonaMetric({prepared.user_id: prepared.val_examples for prepared in evidence})
        compiled = compile_persona_prompt(evidence[:2], evidence[2:], config, metric, prompt_model=lm, task_model=lm)
        assert isinstance(compiled, PersonaSynthesizer)
        record = compiled.compile_record
        assert 0.0 <= record.validation_score <= 100.0
        assert len(record.trial_logs) >= 1
        score = metric(persona_examples(evidence[2:])[0], compiled(past_judgments=evidence[2].past_judgments))
        assert 0.0 <= score <= 1.0

        path = save_compiled(compiled, tmp_path / "persona.json", program_name="persona_synthesizer",
                             score=record.validation_score)
        reloaded = PersonaSynthesizer()
        load_compiled(reloaded, path, program_name="persona_synthesizer")
        assert reloaded.synthesize.predict.signature.instructions == compiled.synthesize.predict.signature.instructions
        assert len(reloaded.synthesize.predict.demos) == len(compiled.synthesize.predict.demos)

"""`compile-persona` goes through the ship gate as every compile does: a compiled persona prompt that does not beat the
uncompiled one on the validation users is saved where asked, its verdict in its metadata, and never registered. No
model server: a fake LM."""

import json
import random

import dspy
import pytest

from prefcraft.components.component import StepRun
from prefcraft.components.synthesizeme import compile_persona as compile_module
from prefcraft.components.synthesizeme.commands import COMPONENT as SYNTHESIZEME
from prefcraft.components.synthesizeme.compile_persona import persona_optimizer_config, select_persona_prompt
from prefcraft.components.synthesizeme.report import format_compile_persona
from prefcraft.flags import parse_step
from prefcraft.loaders.personal_reward_bench import judge_set
from prefcraft.optimizers import compile_gate
from prefcraft.optimizers.persona_prompt import PersonaMetric, default_judge_baselines
from prefcraft.optimizers.prompt_optimizer import GEPAConfig, MIPROv2Config, thresholded
from prefcraft.optimizers.synthesizeme import PersonaEvidence
from prefcraft.runner import open_step_run
from prefcraft.settings import Settings
from prefcraft.tracking.runs import StepTracker
from tests.fakes import FakeTracker, FieldFillingEngine


class AlwaysFirst(FieldFillingEngine):
    """Every judge answers "First" (right on half of the pairs, both orders), whatever the persona."""

    def value(self, field, system, user):
        return {"preference": "First", "persona": "Prefers short answers."}.get(field, "Write the persona.")


class ShortWhenTold(FieldFillingEngine):
    """A judge that picks the shorter completion when its instructions hold the persona "Prefers short answers.", else
    always the first."""

    def value(self, field, system, user):
        if field != "preference":
            return "Reasons."
        if "Prefers short answers." not in system:
            return "First"
        return "First" if user.index("keep it simple") < user.index("first learn the basics") else "Second"


def test_the_papers_metric_is_the_persona_judges_improvement_over_the_default_judge(user_with):
    lm = dspy.LM("fake-model", engine=ShortWhenTold(), cache=False)
    scored = {"u1": judge_set(user_with(2, 2).test)}  # 2 target pairs, the short answer chosen, in both orders
    example = dspy.Example(user_id="u1", past_judgments="...").with_inputs("past_judgments")
    told, untold = dspy.Prediction(persona="Prefers short answers."), dspy.Prediction(persona="Likes cats.")
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        baselines = default_judge_baselines(scored)
        improvement, accuracy = PersonaMetric(scored, baselines), PersonaMetric(scored)
        assert baselines == {"u1": 0.5}  # "First" is right in one order of each pair
        assert improvement(example, told) == pytest.approx(0.5) and accuracy(example, told) == 1.0
        assert improvement(example, untold) == 0.0 and accuracy(example, untold) == 0.5
        # Bootstrapping a demo: by default a persona counts only when it improves on the default judge.
        bootstrapping = thresholded(improvement, threshold())
        assert bootstrapping(example, told, trace=[]) is True and bootstrapping(example, untold, trace=[]) is False


def compile_options(*flags):
    return parse_step(SYNTHESIZEME, "compile-persona", ["--train-users", "a", "--val-users", "b", "--output", "p.json",
                                                        *flags])


def threshold(*flags):
    return persona_optimizer_config(compile_options(*flags), Settings()).metric_threshold


def test_the_bootstrapping_threshold_is_the_persona_metrics_own_unless_given():
    assert 0 < threshold() < 0.01  # any improvement
    assert threshold("--persona-metric", "accuracy") == 0.5
    assert threshold("--metric-threshold", "0.2") == 0.2
    assert isinstance(persona_optimizer_config(compile_options("--optimizer", "gepa"), Settings()), GEPAConfig)


def evidence(user) -> PersonaEvidence:
    return PersonaEvidence(user.user_id, [], judge_set(user.val), [], [], [], random.Random(0), {})


def test_a_persona_prompt_that_does_not_beat_the_uncompiled_one_is_not_shipped(user_with, tmp_path, monkeypatch):
    lm = dspy.LM("fake-model", engine=AlwaysFirst(), cache=False)
    registered = []
    monkeypatch.setattr(compile_module, "build_lm", lambda model: lm)
    monkeypatch.setattr(compile_gate, "register_compiled", lambda *args: registered.append(args) or True)
    monkeypatch.setattr(compile_gate, "check_servers", lambda session: None)  # the fake LM needs no server
    users = [user_with(2, 2, user_id=f"u{i}") for i in range(3)]
    train, val = ([evidence(user) for user in chosen] for chosen in (users[:2], users[2:]))
    config = MIPROv2Config(num_candidates=2, num_trials=2, max_bootstrapped_demos=1, max_labeled_demos=1,
                           num_threads=1)
    tracker = FakeTracker()
    output = tmp_path / "compiled" / "persona.json"
    settings = Settings(threads=1)
    loaded = ({user.user_id: user for user in users[:2]}, {users[2].user_id: users[2]})
    run = StepRun(settings, settings, StepTracker(tracker), print, loaded)
    options = compile_options()  # its params read the users `load_persona_users` read: `loaded`
    with open_step_run(SYNTHESIZEME, tracker, "compile-persona", options, run), \
            dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        metric = PersonaMetric({prepared.user_id: prepared.val_examples for prepared in [*train, *val]})
        verdict = select_persona_prompt(settings, run.tracker, train, val, config, metric, output)

    assert verdict.compiled_score == pytest.approx(verdict.uncompiled_score) == pytest.approx(0.5)
    assert not verdict.won and not registered
    assert verdict.path == output and json.loads(output.read_text())["prefcraft"]["won"] is False
    assert "NOT shipped" in format_compile_persona(verdict) and "persona metric" in format_compile_persona(verdict)
    assert {run.name for run in tracker.runs} >= {"uncompiled-on-val", "compiled-on-val"}
    compiled = tracker.named("compile-persona")
    assert compiled.metrics["won"] == 0 and not compiled.nested
    assert (compiled.params["program"], compiled.params["train_users"], compiled.params["val_users"]) == (
        "persona_synthesizer", "u0,u1", "u2")

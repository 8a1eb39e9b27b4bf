"""`compile-persona` goes through the ship gate as every compile does: a compiled persona prompt that does not beat the
uncompiled one on the validation users is saved aside and never registered. No model server: a fake LM."""

import random

import dspy
import pytest

from prefcraft.components.synthesizeme import compile_persona as compile_module
from prefcraft.components.synthesizeme.compile_persona import select_persona_prompt
from prefcraft.loaders.personal_reward_bench import judge_set
from prefcraft.optimizers import compile_gate
from prefcraft.optimizers.compile_selection import format_verdict
from prefcraft.optimizers.prompt_optimizer import MIPROv2Config
from prefcraft.optimizers.synthesizeme import PersonaEvidence
from prefcraft.settings import Settings
from tests.fakes import FakeTracker, FieldFillingEngine


class AlwaysFirst(FieldFillingEngine):
    """Every judge answers "First" (right on half of the pairs, both orders), whatever the persona."""

    def value(self, field, system, user):
        return {"preference": "First", "persona": "Prefers short answers."}.get(field, "Write the persona.")


def evidence(user) -> PersonaEvidence:
    return PersonaEvidence(user.user_id, [], judge_set(user.val), [], [], [], random.Random(0), {})


def test_a_persona_prompt_that_does_not_beat_the_uncompiled_one_is_not_shipped(user_with, tmp_path, monkeypatch):
    lm = dspy.LM("fake-model", engine=AlwaysFirst(), cache=False)
    registered = []
    monkeypatch.setattr(compile_module, "build_lm", lambda model: lm)
    monkeypatch.setattr(compile_gate, "register_compiled", lambda *args: registered.append(args) or True)
    monkeypatch.setattr(compile_gate, "check_servers", lambda session: None)  # the fake LM needs no server
    train, val = ([evidence(user_with(2, 2, user_id=f"u{i}")) for i in users] for users in ((0, 1), (2,)))
    config = MIPROv2Config(num_candidates=2, num_trials=2, max_bootstrapped_demos=1, max_labeled_demos=1,
                           num_threads=1)
    tracker = FakeTracker()
    output = tmp_path / "compiled" / "persona.json"
    with tracker.run("compile-persona"), dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        verdict = select_persona_prompt(Settings(num_threads=1), tracker, train, val, config, output)

    assert verdict.compiled_score == pytest.approx(verdict.uncompiled_score) == pytest.approx(0.5)
    assert not verdict.won and not registered and not output.exists()
    assert verdict.path == output.parent / "persona_synthesizer.rejected.json" and verdict.path.is_file()
    assert "NOT shipped" in format_verdict(verdict, "persona judge accuracy")
    assert {run.name for run in tracker.runs} >= {"uncompiled-on-val", "compiled-on-val"}
    assert tracker.named("compile-persona").metrics["won"] == 0

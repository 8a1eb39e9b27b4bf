"""MIPROv2 over PrefDisco's asker: the real optimizer on a fake engine, the gated metric, and the shipped program."""

from contextlib import nullcontext

import dspy
import pytest

from prefcraft.components.prefdisco.data import SAMPLE_SCENARIOS, load_scenarios
from prefcraft.components.prefdisco.metrics import GatedPrefAlign
from prefcraft.optimizers.artifacts import load_compiled, save_compiled
from prefcraft.optimizers.compile_selection import differs_from
from prefcraft.optimizers.prefdisco import PROGRAM_NAME, asker_example
from prefcraft.optimizers.prompt_optimizer import MIPROv2Config, PromptOptimizer
from prefcraft.programs.prefdisco import QuestionAsker, SimulatedUser, UserSimulator
from tests.fakes import FieldFillingEngine

MARK = "final line"


class ScriptedEngine(FieldFillingEngine):
    """Fills every requested output field with JSON. The asker answers "8" only under an instruction that mentions
    the final line (as MIPROv2's fake proposer writes), so a proposed instruction beats the original one; the judge
    accepts an answer of 8 and grades every criterion 4. Every prompt is kept, by its output fields."""

    def value(self, name, system, user):
        return {"preferences": [{"attribute": "detail", "value": "brief", "weight": 3}], "action": "ask",
                "question": "How much detail?", "reply": "Little.", "response": "The cost is computed.",
                "final_answer": "8" if MARK in system else "unsure", "grade": 4,
                "correct": "Final answer: 8" in user, "proposed_instruction": f"Ask, then answer; end with a {MARK}.",
                }.get(name, "text")


def examples(scenarios, lm):
    context = lambda: dspy.context(lm=lm, adapter=dspy.JSONAdapter())  # noqa: E731
    return [asker_example(s.scenario_id, s.question,
                          SimulatedUser(s.scenario_id, s.hidden_profile(), UserSimulator(), context))
            for s in scenarios]


def test_real_mipro_compile_on_a_fake_engine_changes_the_asker_and_round_trips(tmp_path):
    engine = ScriptedEngine()
    lm = dspy.LM("fake-model", engine=engine, cache=False)
    scenarios = load_scenarios(SAMPLE_SCENARIOS)[:2]  # math-1: the gold answer is 8
    assert {s.answer for s in scenarios} == {"8"}
    score = GatedPrefAlign({s.scenario_id: s for s in scenarios}, lambda: nullcontext())
    config = MIPROv2Config(num_candidates=2, num_trials=4, max_bootstrapped_demos=1, max_labeled_demos=0,
                           num_threads=1, metric_threshold=0.5)
    optimizer = PromptOptimizer(score, config, prompt_model=lm, task_model=lm)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        compiled = optimizer.compile(QuestionAsker(max_turns=1), trainset=examples(scenarios[:1], lm),
                                     valset=examples(scenarios, lm))
    assert MARK in compiled.answer.signature.instructions and differs_from(compiled, QuestionAsker())
    # correct, every grade 4: PrefAlign 4 / 5, in percent
    assert compiled.compile_record.validation_score == pytest.approx(80.0)
    path = save_compiled(compiled, tmp_path / "asker.json", program_name=PROGRAM_NAME)
    reloaded = QuestionAsker()
    load_compiled(reloaded, path, program_name=PROGRAM_NAME)
    assert reloaded.answer.signature.instructions == compiled.answer.signature.instructions
    assert not differs_from(reloaded, compiled)
    # The hidden profile reached the simulator and the grader, and no other prompt (asker, proposer, summaries).
    values = {criterion.value for s in scenarios for criterion in s.criteria}
    leaked = [fields for fields, text in engine.prompts if any(value in text for value in values)]
    assert leaked and all(fields in (["thought", "reply"], ["grade", "justification"]) for fields in leaked)


def test_the_gated_metric_is_zero_when_wrong_and_pref_align_over_five_when_right():
    scenario = load_scenarios(SAMPLE_SCENARIOS)[0]
    lm = dspy.LM("fake-model", engine=ScriptedEngine(), cache=False)
    score = GatedPrefAlign({scenario.scenario_id: scenario}, lambda: dspy.context(lm=lm, adapter=dspy.JSONAdapter()))
    example = dspy.Example(scenario_id=scenario.scenario_id)
    assert score(example, dspy.Prediction(response="r", final_answer="8")) == pytest.approx(0.8)
    assert score(example, dspy.Prediction(response="r", final_answer="9")) == 0.0


def test_an_uncompiled_asker_saved_as_compiled_does_not_count_as_compiled(tmp_path):
    path = save_compiled(QuestionAsker(), tmp_path / "asker.json", program_name=PROGRAM_NAME)
    loaded = QuestionAsker()
    load_compiled(loaded, path, program_name=PROGRAM_NAME)
    assert not differs_from(loaded, QuestionAsker())

"""PrefDisco's prompts and turns as the reference ran them, on scripted LMs: the fixed question count of Figure 5 (its
own prompt, every turn taken, the model's own words sent), the collaborative simulator's fields, and the reference's
user turn in the Baseline and the Oracle."""

import json
import re
from contextlib import nullcontext
from pathlib import Path

import dspy
import pytest
from dspy.utils import DummyLM

from prefcraft import runner
from prefcraft.components.prefdisco import evaluation
from prefcraft.components.prefdisco.evaluation import DISCOVERY, discovery_asker, load_asker
from prefcraft.components.prefdisco.options import EvaluateOptions
from prefcraft.engine.adapter import output_schema
from prefcraft.engine.lm import build_adapter
from prefcraft.experiments.files import load_experiment
from prefcraft.optimizers.artifacts import save_compiled
from prefcraft.optimizers.prefdisco import PROGRAM_NAME
from prefcraft.programs.prefdisco import FixedQuestionAsker, QuestionAsker, Responder, UserSimulator
from prefcraft.settings import ModelSettings, Settings, SmallModelProfile
from prefcraft.signatures.prefdisco import NextQuestion
from tests.fakes import FakeTracker

PAPER_FILE = Path(__file__).parents[3] / "experiments" / "prefdisco-conditions.toml"

PROBLEM = "What do 12 pens cost at 3 for $2?"
QUESTION = {"question": "How detailed should it be?"}
ANSWER = {"response": "It costs $8.", "final_answer": "8"}


def run(program, replies, user=lambda chat: "Brief, please."):
    lm = DummyLM(replies, adapter=dspy.JSONAdapter())
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        return program(problem=PROBLEM, user=user), lm


def instructions(entry) -> str:
    return " ".join(entry["messages"][0]["content"].split())


def user_turn(entry) -> str:
    return entry["messages"][-1]["content"]


def test_the_fixed_count_asker_is_told_to_ask_exactly_k_and_which_turn_this_is():
    prediction, lm = run(FixedQuestionAsker(3), [QUESTION] * 3 + [ANSWER])
    assert prediction.questions_asked == 3 and prediction.final_answer == "8" and len(lm.history) == 4
    assert "exactly `question_count` clarifying questions" in instructions(lm.history[0])
    assert "this is turn `turn` of `question_count`" in instructions(lm.history[0])
    for turn in range(3):  # counted from 0, as the reference passes its turn counter
        assert f"[[ ## turn ## ]]\n{turn}\n\n[[ ## question_count ## ]]\n3" in user_turn(lm.history[turn])
    assert "Brief, please." in user_turn(lm.history[-1])  # the final answer reads the dialogue


def test_whatever_the_fixed_count_asker_writes_reaches_the_user_and_every_turn_runs():
    chats = []
    early = {"question": "The answer is $8."}
    prediction, _ = run(FixedQuestionAsker(2), [early, QUESTION, ANSWER],
                        user=lambda chat: chats.append(chat) or "Fine.")
    assert [turn["question"] for turn in prediction.turns] == ["The answer is $8.", QUESTION["question"]]
    assert chats == ["Assistant: The answer is $8.",
                     "Assistant: The answer is $8.\nUser: Fine.\nAssistant: How detailed should it be?"]


def test_an_empty_question_fails_the_fixed_count_dialogue_with_its_turn():
    with pytest.raises(ValueError, match="no question on turn 1 of 2"):
        run(FixedQuestionAsker(2), [QUESTION, {"question": "  "}, ANSWER])


def test_a_fixed_count_of_zero_answers_at_once_and_a_negative_one_is_refused():
    prediction, lm = run(FixedQuestionAsker(0), [ANSWER])
    assert prediction.questions_asked == 0 and len(lm.history) == 1
    with pytest.raises(ValueError, match="fixed question count"):
        FixedQuestionAsker(-1)


def test_the_evaluation_takes_the_fixed_count_asker_only_for_a_forced_count():
    assert type(discovery_asker(5)) is QuestionAsker
    forced = discovery_asker(5, forced_questions=2)
    assert type(forced) is FixedQuestionAsker and forced.questions == 2


def test_a_forced_count_puts_the_fixed_count_asker_in_the_evaluation(monkeypatch, tmp_path):
    reply = {"question": "How detailed?", "response": "It is 8.", "final_answer": "8", "thought": "Asked.",
             "reply": "Little.", "grade": 3, "justification": "Partly.", "correct": True}
    lm = DummyLM([reply] * 100, adapter=dspy.JSONAdapter())
    monkeypatch.setattr(evaluation, "lm_context", lambda *args: dspy.context(lm=lm, adapter=dspy.JSONAdapter()))
    options = EvaluateOptions(max_scenarios=1, forced_questions=2, no_shipped=True, output_dir=tmp_path)
    monkeypatch.setattr(runner, "model_session", nullcontext)  # no server: the scripted LM answers
    monkeypatch.setattr(runner, "start_tracking", lambda session: FakeTracker())
    outcome = runner.run_step("prefdisco", "evaluate", options, Settings(threads=1), lambda report: None)
    rows = [json.loads(line) for line in outcome.results_path.read_text().splitlines()]
    [discovery] = [row for row in rows if row["condition"] == DISCOVERY]
    assert discovery["turns"] == [{"question": "How detailed?", "reply": "Little."}] * 2
    assert sum("[[ ## question_count ## ]]\n2" in user_turn(entry) for entry in lm.history) == 2


def test_a_compiled_asker_with_a_fixed_count_keeps_its_final_answer_and_the_fixed_prompt(tmp_path):
    compiled = QuestionAsker(2)
    compiled.answer.signature = compiled.answer.signature.with_instructions("Compiled answer instructions.")
    path = save_compiled(compiled, tmp_path / "asker.json", program_name=PROGRAM_NAME)
    loaded = load_asker(path, max_turns=2, forced_questions=3)
    assert type(loaded) is FixedQuestionAsker and loaded.questions == 3
    assert loaded.answer.signature.instructions == "Compiled answer instructions."
    assert loaded.next_question.signature.instructions == NextQuestion.instructions
    assert load_asker(path, max_turns=2).answer.signature.instructions == "Compiled answer instructions."


def test_the_collaborative_simulator_asks_for_a_detailed_reply_where_the_passive_one_asks_for_a_minimal_one():
    collaborative, passive = UserSimulator(collaborative=True).reply, UserSimulator().reply
    described = {name: field.json_schema_extra["desc"] for name, field in collaborative.signature.output_fields.items()}
    assert "detailed" in described["reply"] and not any("minimal" in desc for desc in described.values())
    assert "minimal" in passive.signature.output_fields["reply"].json_schema_extra["desc"]
    assert list(collaborative.signature.fields) == list(passive.signature.fields)
    # the same fields, so the small-model profile bounds the collaborative reply as it bounds the passive one
    bounds = build_adapter(ModelSettings(), SmallModelProfile()).bounds
    schemas = [output_schema(predictor.signature, bounds)["properties"] for predictor in (collaborative, passive)]
    assert schemas[0] == schemas[1] and schemas[0]["reply"]["maxLength"] == 120


@pytest.mark.parametrize("known", ["", "- detail: brief"], ids=["baseline", "oracle"])
def test_the_baseline_and_the_oracle_get_the_task_as_the_reference_user_turn(known):
    lm = DummyLM([ANSWER], adapter=dspy.JSONAdapter())
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        Responder()(problem=PROBLEM, user_preferences=known)
    assert f"I need help with the following task: {PROBLEM}" in user_turn(lm.history[-1])


def test_the_paper_scale_file_lets_answers_run_to_the_reference_cap_and_serves_a_context_that_holds_them():
    task = load_experiment(PAPER_FILE).settings.task
    assert task.max_tokens == 8192
    [context] = re.findall(r"--max-model-len (\d+)", PAPER_FILE.read_text())
    assert int(context) >= 2 * task.max_tokens  # the longest prompt, then the longest answer

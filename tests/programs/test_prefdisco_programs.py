"""PrefDisco's programs on scripted LMs: the turn budget, the forced-k mode, grading, and the profile-leak check."""

import dspy
import pytest
from dspy.utils import DummyLM

from prefcraft.programs.prefdisco import (
    FALLBACK_QUESTION,
    QuestionAsker,
    Responder,
    RubricGrader,
    SimulatedUser,
    UserSimulator,
)

ESTIMATE = [{"attribute": "detail", "value": "brief", "weight": 4}]
ASK = {"preferences": ESTIMATE, "action": "ask", "question": "How detailed should it be?"}
STOP = {"preferences": ESTIMATE, "action": "answer", "question": ""}
ANSWER = {"response": "It costs $8.", "final_answer": "8"}
SECRET = "SECRET-VALUE-7731"


def scripted(replies):
    return DummyLM(replies, adapter=dspy.JSONAdapter())


def run_asker(asker, asker_replies, user=lambda question: "Brief, please."):
    lm = scripted(asker_replies)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        return asker(problem="What do 12 pens cost at 3 for $2?", user=user), lm


def test_an_asker_that_keeps_asking_stops_at_its_turn_budget():
    prediction, lm = run_asker(QuestionAsker(max_turns=3), [ASK] * 3 + [ANSWER])
    assert prediction.questions_asked == 3 and len(lm.history) == 4
    assert prediction.final_answer == "8" and prediction.preferences == ESTIMATE
    assert "questions_left" in lm.history[2]["messages"][-1]["content"]
    assert "Brief, please." in lm.history[-1]["messages"][-1]["content"]  # the answer reads the dialogue


def test_an_asker_that_decides_to_answer_asks_nothing_more():
    prediction, lm = run_asker(QuestionAsker(max_turns=5), [ASK, STOP, ANSWER])
    assert prediction.questions_asked == 1 and len(lm.history) == 3


def test_forced_mode_asks_exactly_k_questions_whatever_the_asker_decides():
    prediction, _ = run_asker(QuestionAsker(max_turns=5, forced_questions=2), [STOP, STOP, ANSWER])
    assert prediction.questions_asked == 2
    assert [turn["question"] for turn in prediction.turns] == [FALLBACK_QUESTION] * 2


def test_a_zero_budget_answers_at_once():
    prediction, lm = run_asker(QuestionAsker(max_turns=0), [ANSWER])
    assert prediction.questions_asked == 0 and len(lm.history) == 1
    with pytest.raises(ValueError):
        QuestionAsker(max_turns=-1)


def test_the_hidden_profile_reaches_the_simulator_and_never_the_asker():
    simulator_lm = scripted([{"reply": "Brief, please."}] * 3)
    user = SimulatedUser("s1", f"- detail: {SECRET}", UserSimulator(),
                         lambda: dspy.context(lm=simulator_lm, adapter=dspy.JSONAdapter()))
    prediction, asker_lm = run_asker(QuestionAsker(max_turns=3), [ASK] * 3 + [ANSWER], user)
    assert prediction.questions_asked == 3
    asker_prompts = [str(entry["messages"]) for entry in asker_lm.history]
    assert len(asker_prompts) == 4 and not any(SECRET in prompt for prompt in asker_prompts)
    assert all(SECRET in str(entry["messages"]) for entry in simulator_lm.history)  # the check can fail
    assert SECRET not in repr(user)


def test_the_collaborative_simulator_has_its_own_instructions():
    assert UserSimulator(True).reply.signature.instructions != UserSimulator().reply.signature.instructions


def test_the_grader_makes_one_call_per_criterion_and_one_for_correctness():
    lm = scripted([{"grade": 4}, {"grade": 2}, {"correct": True}])
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        graded = RubricGrader()(problem="p", response="r", criteria=["a", "b"], reference_answer="8")
    assert graded.grades == [4, 2] and graded.correct is True and len(lm.history) == 3


def test_a_grade_that_does_not_parse_is_missing_not_a_failed_grading():
    lm = scripted([{"grade": 4}, {"verdict": "excellent"}, {"correct": True}])
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        graded = RubricGrader()(problem="p", response="r", criteria=["a", "b"], reference_answer="8")
    assert graded.grades == [4, None] and graded.correct is True


def test_the_responder_passes_what_is_known_of_the_user():
    lm = scripted([ANSWER])
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        Responder()(problem="p", user_preferences=f"- detail: {SECRET}")
    assert SECRET in str(lm.history[-1]["messages"])

"""PrefDisco's programs on scripted LMs: the turn budget, the simulator's view of the conversation,
grading, the paper's temperatures, the Baseline's bare prompt and the profile-leak check."""

import dspy
import pytest
from dspy.utils import DummyLM

from prefcraft.programs.prefdisco import (
    CORRECTNESS_TEMPERATURE,
    GRADER_TEMPERATURE,
    SIMULATOR_TEMPERATURE,
    QuestionAsker,
    Responder,
    RubricGrader,
    SimulatedUser,
    UserSimulator,
)

ASK = {"action": "ask", "question": "How detailed should it be?"}
STOP = {"action": "answer", "question": ""}
ANSWER = {"response": "It costs $8.", "final_answer": "8"}
REPLY = {"thought": "They asked about detail.", "reply": "Brief, please."}
SECRET = "SECRET-VALUE-7731"
PROBLEM = "What do 12 pens cost at 3 for $2?"


def scripted(replies):
    return DummyLM(replies, adapter=dspy.JSONAdapter())


def run_asker(asker, asker_replies, user=lambda chat: "Brief, please."):
    lm = scripted(asker_replies)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        return asker(problem=PROBLEM, user=user), lm


def prompt(entry) -> str:
    """Every message of a call, its whitespace collapsed (instructions wrap across lines)."""
    return " ".join(" ".join(message["content"] for message in entry["messages"]).split())


def test_an_asker_that_keeps_asking_stops_at_its_turn_budget():
    prediction, lm = run_asker(QuestionAsker(max_turns=3), [ASK] * 3 + [ANSWER])
    assert prediction.questions_asked == 3 and len(lm.history) == 4
    assert prediction.final_answer == "8"
    assert "questions_left" in lm.history[2]["messages"][-1]["content"]
    assert "Brief, please." in lm.history[-1]["messages"][-1]["content"]  # the answer reads the dialogue


def test_the_asker_may_ask_one_or_two_questions_and_answers_for_alignment():
    _, lm = run_asker(QuestionAsker(max_turns=1), [ASK, ANSWER])
    assert "one or two clarifying questions" in prompt(lm.history[0])
    assert "do not give a full answer until" in prompt(lm.history[0])
    assert "evaluated on how well your explanation aligns" in prompt(lm.history[-1])


def test_the_final_answer_reads_the_conversation_as_chat_turns():
    _, lm = run_asker(QuestionAsker(max_turns=1), [ASK, ANSWER])
    messages = lm.history[-1]["messages"]
    assert [message["role"] for message in messages] == ["system", "user", "assistant", "user"]
    assert f"I need help with the following task: {PROBLEM}" in messages[1]["content"]
    assert ASK["question"] in messages[2]["content"] and "Brief, please." in messages[3]["content"]


def test_the_user_reads_the_whole_conversation_ending_with_the_new_question():
    chats = []
    run_asker(QuestionAsker(max_turns=2), [ASK, {**ASK, "question": "Words or symbols?"}, ANSWER],
              user=lambda chat: chats.append(chat) or "Brief, please.")
    assert chats == ["Assistant: How detailed should it be?",
                     "Assistant: How detailed should it be?\nUser: Brief, please.\nAssistant: Words or symbols?"]


def test_an_asker_that_decides_to_answer_asks_nothing_more():
    prediction, lm = run_asker(QuestionAsker(max_turns=5), [ASK, STOP, ANSWER])
    assert prediction.questions_asked == 1 and len(lm.history) == 3


def test_a_zero_budget_answers_at_once():
    prediction, lm = run_asker(QuestionAsker(max_turns=0), [ANSWER])
    assert prediction.questions_asked == 0 and len(lm.history) == 1
    with pytest.raises(ValueError):
        QuestionAsker(max_turns=-1)


def test_the_hidden_profile_reaches_the_simulator_and_never_the_asker():
    simulator_lm = scripted([REPLY] * 3)
    user = SimulatedUser("s1", f"- detail: {SECRET}", UserSimulator(),
                         lambda: dspy.context(lm=simulator_lm, adapter=dspy.JSONAdapter()))
    prediction, asker_lm = run_asker(QuestionAsker(max_turns=3), [ASK] * 3 + [ANSWER], user)
    assert prediction.questions_asked == 3
    asker_prompts = [str(entry["messages"]) for entry in asker_lm.history]
    assert len(asker_prompts) == 4 and not any(SECRET in prompt for prompt in asker_prompts)
    assert all(SECRET in str(entry["messages"]) for entry in simulator_lm.history)  # the check can fail
    assert "User: Brief, please." in prompt(simulator_lm.history[-1])  # later turns carry the history
    assert SECRET not in repr(user)


def test_the_simulator_samples_at_the_reference_temperature():
    lm = scripted([REPLY])
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        reply = UserSimulator()(hidden_profile="- detail: brief", chat_history="Assistant: How detailed?")
    assert reply.reply == "Brief, please." and lm.history[0]["kwargs"]["temperature"] == SIMULATOR_TEMPERATURE == 0.4


def test_the_collaborative_simulator_has_its_own_instructions_and_the_same_temperature():
    collaborative = UserSimulator(True).reply
    assert collaborative.signature.instructions != UserSimulator().reply.signature.instructions
    assert collaborative.config["temperature"] == SIMULATOR_TEMPERATURE


def test_the_grader_makes_one_call_per_criterion_and_one_for_correctness():
    lm = scripted([{"grade": 4, "justification": "uses equations"}, {"grade": 2, "justification": "too warm"},
                   {"justification": "both say 8", "correct": True}])
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        graded = RubricGrader()(problem=PROBLEM, response="r", criteria=["a", "b"], reference_answer="8")
    assert graded.grades == [4, 2] and graded.correct is True and len(lm.history) == 3
    assert graded.justifications == ["uses equations", "too warm"]
    assert [entry["kwargs"]["temperature"] for entry in lm.history] == [GRADER_TEMPERATURE] * 2 + [
        CORRECTNESS_TEMPERATURE]
    assert GRADER_TEMPERATURE == 0.1
    assert not any(PROBLEM in prompt(entry) for entry in lm.history[:2])  # the paper's judge reads no problem


def test_a_grade_that_does_not_parse_is_missing_not_a_failed_grading():
    lm = scripted([{"grade": 4, "justification": "j"}, {"verdict": "excellent"},
                   {"justification": "j", "correct": True}])
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        graded = RubricGrader()(problem="p", response="r", criteria=["a", "b"], reference_answer="8")
    assert graded.grades == [4, None] and graded.justifications == ["j", ""] and graded.correct is True


def test_the_oracle_is_told_the_profile_and_that_alignment_is_evaluated():
    lm = scripted([ANSWER])
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        Responder()(problem="p", user_preferences=f"- detail: {SECRET}")
    assert SECRET in prompt(lm.history[-1]) and "evaluated on how well" in prompt(lm.history[-1])


def test_the_baseline_gets_the_problem_with_no_word_of_personalizing():
    lm = scripted([ANSWER])
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        answer = Responder()(problem=PROBLEM, user_preferences="")
    assert answer.final_answer == "8" and PROBLEM in prompt(lm.history[-1])
    assert not any(word in prompt(lm.history[-1]).lower() for word in ("prefer", "personal", "persona", "evaluated"))

"""CUPID's programs on a scripted LM: what each variant calls, how replies are read, and what never reaches a prompt."""

import json

import dspy
import pytest
from dspy.utils import DummyLM

from prefcraft.components.cupid.data import CupidInstance
from prefcraft.programs.cupid import (
    INFERRER_VARIANTS,
    PreferenceInferrer,
    PreferenceMatch,
    ResponseGenerator,
    ResponseJudge,
    SummaryResponder,
    number_sessions,
)
from prefcraft.signatures.cupid import (
    DecomposePreference,
    InferPreference,
    JudgeResponse,
    MatchChecklist,
    SessionSummary,
    SummarizeSession,
)

# One reply that holds every output field of every CUPID signature; each call keeps its own fields.
REPLY = {"relevant_sessions": [2, 9], "analysis": "The user wants it short.", "context": "- A note to a manager.",
         "preference": "Keep it short.", "checklist": ["Is it short?", "Is it warm?"],
         "reasoning": "Both are about the note.", "coverage": ["Fully", "Partially"], "response": "A short answer.",
         "evaluation": "Short, not warm.", "label": "Good", "score": 7,
         "summaries": [{"session": number, "analysis": "A note again.", "context": [f"Manager note {number}."],
                        "preferences": ["Short notes.", "Decision first."]} for number in (1, 2)]}
GOLD_MARKERS = ("GOLD-FACTOR", "GOLD-SESSION-PREFERENCE", "GOLD-CURRENT-PREFERENCE", "GOLD-CHECK")


def scripted(reply=REPLY, count=200):
    return DummyLM([reply] * count, adapter=dspy.JSONAdapter())


def marked_instance(sessions=3) -> CupidInstance:
    """An instance whose gold fields carry markers that appear nowhere in its dialogues or request."""
    return CupidInstance.model_validate({
        "instance_id": "p/consistent/0", "persona_id": "p", "instance_type": "consistent",
        "current_request": "Write a note to my manager about the launch.",
        "current_context_factor": "GOLD-FACTOR-current",
        "current_contextual_preference": "GOLD-CURRENT-PREFERENCE: short notes.",
        "current_checklist": ["GOLD-CHECK-1: is it short?", "GOLD-CHECK-2: decision first?"],
        "prior_interactions": [
            {"context_factor": f"GOLD-FACTOR-{i}", "contextual_preference": f"GOLD-SESSION-PREFERENCE-{i}",
             "dialogue": [{"role": "user", "content": f"dialogue-{i}: help me write a note to my manager."},
                          {"role": "assistant", "content": "Here is a draft."},
                          {"role": "user", "content": "Too long for her phone."}]}
            for i in range(sessions)
        ],
    })


def prompts(lm) -> str:
    return json.dumps([entry["messages"] for entry in lm.history])


@pytest.mark.parametrize(("variant", "calls"),
                         [("all", 1), ("relevant", 2), ("summaries", 2), ("summaries-per-session", 4)])
def test_each_variant_makes_its_calls_and_returns_one_preference(variant, calls):
    lm = scripted()
    example = marked_instance(sessions=3).example()
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        prediction = PreferenceInferrer(variant)(**example.inputs())
    assert prediction.preference == "Keep it short."
    assert len(lm.history) == calls
    assert prediction.used_sessions == ([2] if variant == "relevant" else [1, 2, 3])  # 9 is not a session: dropped


def test_relevant_variant_infers_from_the_selected_sessions_only():
    lm = scripted()
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        PreferenceInferrer("relevant")(**marked_instance(sessions=3).example().inputs())
    infer_prompt = json.dumps(lm.history[-1]["messages"])
    assert "dialogue-1" in infer_prompt and "dialogue-0" not in infer_prompt and "dialogue-2" not in infer_prompt


def test_unknown_variant_and_empty_history_are_refused():
    with pytest.raises(ValueError, match="unknown inferrer variant"):
        PreferenceInferrer("oracle")
    with pytest.raises(ValueError, match="at least one prior session"):
        PreferenceInferrer()(sessions=[], current_request="hi")


def test_gold_fields_never_reach_the_inferrer_or_the_generator():
    """Every prompt the inferrer (all variants) and the generator send is recorded and searched for the gold."""
    instance = marked_instance()
    example = instance.example()
    lm = scripted()
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        for variant in INFERRER_VARIANTS:
            inferred = PreferenceInferrer(variant)(**example.inputs()).preference
        generator = ResponseGenerator()
        generator(request=instance.current_request)
        generator(request=instance.current_request, sessions=example.sessions)
        generator(request=instance.current_request, preference=inferred)
    sent = prompts(lm)
    assert len(lm.history) == 1 + 2 + 2 + 4 + 3
    assert "dialogue-0" in sent and instance.current_request in sent  # the recording does hold the inputs
    assert [marker for marker in GOLD_MARKERS if marker in sent] == []


def test_graders_do_read_the_gold_so_the_leak_check_can_fail():
    instance = marked_instance()
    lm = scripted()
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        PreferenceMatch()(preference="Keep it short.", gold_preference=instance.current_contextual_preference,
                          gold_checklist=list(instance.current_checklist))
        ResponseJudge()(request=instance.current_request, response="ok",
                        preference=instance.current_contextual_preference, checklist=instance.current_checklist)
    sent = prompts(lm)
    assert "GOLD-CURRENT-PREFERENCE" in sent and "GOLD-CHECK-1" in sent


def test_match_runs_the_decomposer_once_and_the_matcher_twice():
    lm = scripted()
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        prediction = PreferenceMatch()(preference="Keep it short.", gold_preference="Short, warm notes.",
                                       gold_checklist=["Short?", "Warm?", "Decision first?"])
    assert len(lm.history) == 3
    assert prediction.checklist == ["Is it short?", "Is it warm?"]
    # Two labels for two inferred items; two labels for three gold items: the third is Not covered and counted.
    assert prediction.match.predicted_coverage == [1.0, 0.5]
    assert prediction.match.true_coverage == [1.0, 0.5, 0.0]
    assert prediction.match.missing_labels == 1


def test_an_empty_inferred_checklist_asks_no_matcher_and_covers_no_gold_item():
    lm = scripted({**REPLY, "checklist": []})
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        prediction = PreferenceMatch()(preference="", gold_preference="Short.", gold_checklist=["Short?", "Warm?"])
    assert len(lm.history) == 1  # the decomposer alone
    assert prediction.match.predicted_coverage == [] and prediction.match.precision == 0.0
    assert prediction.match.true_coverage == [0.0, 0.0]


@pytest.mark.parametrize(("per_session", "calls"), [(False, 2), (True, 4)])
def test_the_summary_responder_answers_from_the_summaries_not_the_dialogues(per_session, calls):
    instance = marked_instance(sessions=3)
    lm = scripted()
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        prediction = SummaryResponder(per_session)(request=instance.current_request, sessions=instance.sessions())
    assert prediction.response == "A short answer." and len(lm.history) == calls
    generation = json.dumps(lm.history[-1]["messages"])
    assert "Summaries of the user's past sessions" in generation and "dialogue-0" not in generation
    assert ("A note to a manager." if per_session else "Manager note 2.") in generation
    assert [marker for marker in GOLD_MARKERS if marker in prompts(lm)] == []


def test_generator_takes_sessions_or_a_preference_not_both():
    with pytest.raises(ValueError, match="not both"):
        ResponseGenerator()(request="r", sessions=["s"], preference="p")


def test_number_sessions_keeps_chosen_sessions_in_order():
    assert number_sessions(["a", "b", "c"], [3, 1, 3]) == "Session 1:\na\n\nSession 3:\nc"


def test_summaries_are_written_in_one_call_over_the_log_and_give_the_inferrer_each_sessions_context_and_preferences():
    lm = scripted()
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        PreferenceInferrer("summaries")(**marked_instance(sessions=2).example().inputs())
    summarize_prompt, infer_prompt = (json.dumps(entry["messages"]) for entry in lm.history)
    assert "dialogue-0" in summarize_prompt and "dialogue-1" in summarize_prompt
    summaries = [f"Session {number}:\\nContext:\\n- Manager note {number}.\\nPreferences:\\n- Short notes.\\n"
                 "- Decision first." for number in (1, 2)]
    assert all(summary in infer_prompt for summary in summaries)
    assert "A note again." not in infer_prompt and "dialogue-0" not in infer_prompt  # no analysis, no dialogue


def test_summaries_per_session_summarise_one_dialogue_a_call():
    lm = scripted()
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        PreferenceInferrer("summaries-per-session")(**marked_instance(sessions=2).example().inputs())
    first, second, infer_prompt = (json.dumps(entry["messages"]) for entry in lm.history)
    assert "dialogue-0" in first and "dialogue-1" not in first and "dialogue-1" in second
    assert infer_prompt.count("Context:\\n- A note to a manager.\\nPreferences:\\nKeep it short.") == 2
    assert "dialogue-0" not in infer_prompt


@pytest.mark.parametrize(("signature", "analysis", "answer"), [
    (InferPreference, "analysis", "preference"), (SummarizeSession, "analysis", "preference"),
    (DecomposePreference, "analysis", "checklist"), (MatchChecklist, "reasoning", "coverage"),
    (JudgeResponse, "evaluation", "score"),
])
def test_each_analysis_step_comes_before_its_answer(signature, analysis, answer):
    fields = list(signature.output_fields)
    assert fields.index(analysis) < fields.index(answer)


def test_each_session_summary_analyses_before_it_summarises():
    assert list(SessionSummary.model_fields) == ["session", "analysis", "context", "preferences"]


def test_the_calibration_examples_are_the_papers_count():
    assert MatchChecklist.instructions.count("Preference: ") == 8
    assert DecomposePreference.instructions.count("Preference: ") == 5
    assert InferPreference.instructions.count('\n- "') == 4


def test_the_session_selector_prompt_names_plain_session_numbers():
    lm = scripted()
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        PreferenceInferrer("relevant")(**marked_instance(sessions=2).example().inputs())
    system = lm.history[0]["messages"][0]["content"]
    assert "list[Literal[1, 2, 3," in system and "Annotated" not in system

import dspy
import pytest
from dspy.utils import DummyLM

import prefcraft
from prefcraft.engine.adapter import SchemaAdapter
from prefcraft.engine.item_failures import UNPARSEABLE, reason_kind
from prefcraft.optimizers.artifacts import load_compiled, save_compiled
from prefcraft.programs.sensejudge import (
    DESCRIPTION_MAX_TOKENS,
    DescriptionJudge,
    PreferenceExtractor,
    SelectedJudge,
    description_judge,
)

PAIRS = [{"conversation": f"[user]: question {i}", "chosen_response": "Short.", "rejected_response": "Long " * 20}
         for i in range(3)]
INPUTS = {"conversation": "[user]: hi", "first_completion": "Hello!", "second_completion": "Greetings, friend."}


def test_extractor_writes_an_empty_description_one_per_pair_and_an_aggregate():
    lm = DummyLM([{"preference": f"Likes brevity {i}."} for i in range(3)] + [{"preference": "Likes brevity."}])
    with dspy.context(lm=lm):
        descriptions = PreferenceExtractor()(pairs=PAIRS).descriptions
    assert descriptions == ["", "Likes brevity 0.", "Likes brevity 1.", "Likes brevity 2.", "Likes brevity."]
    aggregate_prompt = lm.history[-1]["messages"][-1]["content"]
    assert all(f"question {i}" in aggregate_prompt for i in range(3))


def test_extractor_writes_each_description_within_the_reference_budget():
    lm = DummyLM([{"preference": "Likes brevity."}] * 4)
    with dspy.context(lm=lm):
        PreferenceExtractor()(pairs=PAIRS)
    assert [call["kwargs"]["max_tokens"] for call in lm.history] == [DESCRIPTION_MAX_TOKENS] * 4 == [512] * 4


def test_a_failed_description_is_left_empty_and_recorded_and_the_others_are_written():
    # The aggregate's reply lacks its field, as JSON cut at the token limit does; the per-pair calls answer.
    lm = DummyLM({"Comparison 1": {"cut": "The user pre"}, **{f"question {i}": {"preference": f"Likes brevity {i}."}
                                                              for i in range(3)}})
    with dspy.context(lm=lm):
        extracted = PreferenceExtractor()(pairs=PAIRS)
    assert extracted.descriptions == ["", "Likes brevity 0.", "Likes brevity 1.", "Likes brevity 2.", ""]
    assert list(extracted.failures) == [4] and reason_kind(extracted.failures[4]) == UNPARSEABLE


def test_extractor_caps_the_per_pair_descriptions_but_aggregates_every_pair():
    lm = DummyLM([{"preference": "First pair."}, {"preference": "All pairs."}])
    with dspy.context(lm=lm):
        descriptions = PreferenceExtractor(max_pair_descriptions=1)(pairs=PAIRS).descriptions
    assert descriptions == ["", "First pair.", "All pairs."]
    assert "question 2" in lm.history[-1]["messages"][-1]["content"]
    with pytest.raises(ValueError, match="at least one labelled pair"):
        PreferenceExtractor()(pairs=[])


class Fixed(dspy.Module):
    def __init__(self, answer):
        super().__init__()
        self.answer = answer

    def forward(self, **inputs):
        if self.answer is None:
            raise RuntimeError("server hiccup")
        return dspy.Prediction(preference=self.answer)


def judge_of(*answers) -> SelectedJudge:
    judge = SelectedJudge()
    judge.judges = [Fixed(answer) for answer in answers]
    return judge


def test_selected_judge_votes_counts_failures_against_the_chosen_response_and_breaks_ties_to_the_first():
    assert judge_of("Second", "Second", "First")(**INPUTS).preference == "Second"
    assert judge_of("Second", "First")(**INPUTS).preference == "First"
    prediction = judge_of("Second", None, "Second")(**INPUTS)
    assert prediction.preference == "Second" and prediction.votes == ["Second", None, "Second"]
    assert judge_of("Second", None)(**INPUTS).preference is None  # wrong whichever response was chosen
    abstaining = judge_of("Second", None)
    abstaining.unparseable_vote = "abstain"
    assert abstaining(**INPUTS).preference == "Second"
    with pytest.raises(RuntimeError, match="hiccup"):
        judge_of(None, None)(**INPUTS)
    with pytest.raises(ValueError, match="no descriptions"):
        SelectedJudge()(**INPUTS)


def test_description_is_the_preferences_block_and_the_empty_one_leaves_it_empty():
    instructions = description_judge("Likes lists.").judge.signature.instructions
    assert instructions.endswith("===\nLikes lists.\n===")
    assert "score each of the two responses" in instructions
    assert description_judge("").judge.signature.instructions.endswith("===\n\n===")


def test_description_judge_scores_then_decides_and_answers_in_positions():
    lm = DummyLM([{"analysis": "A: 2/5, B: 4/5.", "decision": "Response B"}])
    with dspy.context(lm=lm):
        prediction = DescriptionJudge("Likes greetings.")(**INPUTS)
    assert prediction.preference == "Second" and prediction.analysis == "A: 2/5, B: 4/5."
    prompt = lm.history[-1]["messages"][-1]["content"]
    assert "[user]: hi" in prompt and "Hello!" in prompt and "Greetings, friend." in prompt


def test_compiled_json_round_trip_loads_with_one_call_and_sends_the_same_prompts(tmp_path):
    judge = SelectedJudge(["", "Likes short answers.", "Writes in Chinese."], unparseable_vote="abstain")
    path = save_compiled(judge, tmp_path / "sensejudge.json", program_name="sensejudge", selected=[0, 2, 5])
    loaded = SelectedJudge()
    metadata = load_compiled(loaded, path, program_name="sensejudge")
    assert metadata["selected"] == [0, 2, 5]
    assert len(loaded.judges) == 3 and loaded.unparseable_vote == "abstain"
    adapter = SchemaAdapter()
    inputs = {"query": "[user]: hi", "response_a": "Hello!", "response_b": "Greetings, friend."}
    for original, restored in zip(judge.judges, loaded.judges, strict=True):
        signature, restored_signature = original.judge.signature, restored.judge.signature
        assert adapter.format(restored_signature, [], inputs) == adapter.format(signature, [], inputs)
    lm = DummyLM([{"analysis": "short", "decision": "Response B"}] * 3)
    with dspy.context(lm=lm):
        assert loaded(**INPUTS).preference == "Second"
    assert len(lm.history) == 3


def test_a_judge_selected_per_topic_judges_with_its_topics_subset_and_round_trips(tmp_path):
    judge = SelectedJudge.of_topics({"Math": SelectedJudge(["", "Shows every step."]),
                                     "QA": SelectedJudge(["Likes short answers."])})
    assert judge.topics == {"Math": [0, 1], "QA": [2]}
    lm = DummyLM([{"analysis": "short", "decision": "Response B"}] * 3)
    with dspy.context(lm=lm):
        assert judge(**INPUTS, topic="QA").preference == "Second"
    assert len(lm.history) == 1 and "Likes short answers." in lm.history[0]["messages"][0]["content"]
    with pytest.raises(ValueError, match="Math, QA, not for None"):
        judge(**INPUTS)

    path = save_compiled(judge, tmp_path / "sensejudge.json", program_name="sensejudge")
    loaded = prefcraft.load(path).program
    assert loaded.topics == judge.topics and loaded.unparseable_vote == judge.unparseable_vote
    adapter = SchemaAdapter()
    inputs = {"query": "[user]: hi", "response_a": "Hello!", "response_b": "Greetings, friend."}
    for topic in judge.topics:
        for original, restored in zip(judge.for_topic(topic).judges, loaded.for_topic(topic).judges, strict=True):
            assert adapter.format(restored.judge.signature, [], inputs) == adapter.format(original.judge.signature, [],
                                                                                         inputs)


def test_a_judge_selected_over_all_pairs_is_its_own_for_every_topic():
    judge = SelectedJudge(["", "Likes short answers."])
    assert judge.for_topic("Math") is judge and judge.for_topic(None) is judge

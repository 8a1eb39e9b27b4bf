import dspy
import pytest
from dspy.utils import DummyLM

from prefcraft.adapter import SchemaAdapter
from prefcraft.optimizers.artifacts import load_compiled, save_compiled
from prefcraft.programs.sensejudge import PreferenceExtractor, SelectedJudge, description_judge

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


def test_selected_judge_votes_abstains_on_failures_and_breaks_ties_to_the_first_response():
    assert judge_of("Second", "Second", "First")(**INPUTS).preference == "Second"
    assert judge_of("Second", "First")(**INPUTS).preference == "First"
    prediction = judge_of("Second", None, "Second")(**INPUTS)
    assert prediction.preference == "Second" and prediction.votes == ["Second", None, "Second"]
    with pytest.raises(RuntimeError, match="hiccup"):
        judge_of(None, None)(**INPUTS)
    with pytest.raises(ValueError, match="no descriptions"):
        SelectedJudge()(**INPUTS)


def test_description_conditions_the_judge_and_the_empty_one_is_the_default_judge():
    assert "Likes lists." in description_judge("Likes lists.").judge.predict.signature.instructions
    assert "personalized reward model" not in description_judge("").judge.predict.signature.instructions


def test_compiled_json_round_trip_loads_with_one_call_and_sends_the_same_prompts(tmp_path):
    judge = SelectedJudge(["", "Likes short answers.", "Writes in Chinese."])
    path = save_compiled(judge, tmp_path / "sensejudge.json", program_name="sensejudge", selected=[0, 2, 5])
    loaded = SelectedJudge()
    metadata = load_compiled(loaded, path, program_name="sensejudge")
    assert metadata["selected"] == [0, 2, 5]
    assert len(loaded.judges) == 3
    adapter = SchemaAdapter()
    for original, restored in zip(judge.judges, loaded.judges, strict=True):
        signature, restored_signature = original.judge.predict.signature, restored.judge.predict.signature
        assert adapter.format(restored_signature, [], INPUTS) == adapter.format(signature, [], INPUTS)
    lm = DummyLM([{"reasoning": "short", "preference": "Second"}] * 3)
    with dspy.context(lm=lm):
        assert loaded(**INPUTS).preference == "Second"
    assert len(lm.history) == 3

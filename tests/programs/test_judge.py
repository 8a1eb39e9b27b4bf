from prefcraft.engine.adapter import SchemaAdapter
from prefcraft.loaders.personal_reward_bench import judge_examples
from prefcraft.optimizers.artifacts import load_compiled, save_compiled
from prefcraft.programs.judge import PreferenceJudge


def test_user_context_keeps_the_chain_of_thought(pair):
    signature = PreferenceJudge("Likes short answers.").judge.predict.signature
    assert list(signature.output_fields) == ["reasoning", "preference"]
    assert "Likes short answers." in signature.instructions


def test_a_saved_personal_judge_sends_the_same_prompt_after_loading(tmp_path, pair):
    first, second = judge_examples(pair(0, "train"))[0], judge_examples(pair(1, "train"))[1]
    judge = PreferenceJudge("Likes short answers.")
    judge.demos = [first.copy(reasoning="The short one is direct."), second]  # a verified trace and a labeled pair
    loaded = PreferenceJudge()
    load_compiled(loaded, save_compiled(judge, tmp_path / "u1.json", program_name="judge"), program_name="judge")

    adapter, inputs = SchemaAdapter(), judge_examples(pair(7, "test"))[0].inputs().toDict()
    original_prompt = adapter.format(judge.judge.predict.signature, judge.demos, inputs)
    assert adapter.format(loaded.judge.predict.signature, loaded.demos, inputs) == original_prompt
    assert "The short one is direct." in str(original_prompt)


def test_only_the_default_judge_is_asked_for_one_to_three_speculations():
    default = PreferenceJudge().judge.predict.signature.instructions
    personal = PreferenceJudge("Likes short answers.").judge.predict.signature.instructions
    assert "one to three hypotheses" in default
    assert "one to three" not in personal and "personalized reward model" in personal

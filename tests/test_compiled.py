import json

from prefcraft.commands.fit import default_persona_prompt, load_persona_synthesizer
from prefcraft.settings import ModelSettings


def test_the_default_task_model_has_a_shipped_persona_prompt_that_loads():
    model = ModelSettings().model
    path = default_persona_prompt(model)
    assert path is not None and path.is_file()
    synthesizer, source = load_persona_synthesizer(path)
    assert source == str(path)
    saved = json.loads(path.read_text(encoding="utf-8"))["synthesize.predict"]
    assert synthesizer.synthesize.predict.signature.instructions == saved["signature"]["instructions"]
    assert len(synthesizer.synthesize.predict.demos) == len(saved["demos"])


def test_a_model_without_a_shipped_prompt_falls_back_to_the_uncompiled_one():
    assert default_persona_prompt("openai/some-other-model") is None
    assert load_persona_synthesizer(None)[1] == "uncompiled"

import json
from pathlib import Path

import pytest

from prefcraft.components.sensejudge.data import CUT, load_dialogues
from prefcraft.errors import DataError

SENSEBENCH = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "sensebench"
needs_sensebench = pytest.mark.skipif(not (SENSEBENCH / "new_sense_bmk.json").is_file(),
                                      reason="SenseBench dialogues not present at ../shared/data/sensebench/")


def turn(speaker, text, **extra):
    return {"from": speaker, "content": [{"type": "text", "value": text}], **extra}


def write(tmp_path, dialogues) -> Path:
    path = tmp_path / "new_sense_bmk.json"
    path.write_text(json.dumps(dialogues, ensure_ascii=False), encoding="utf-8")
    return path


@needs_sensebench
def test_the_real_file_loads_all_411_dialogues_with_the_documented_topics():
    dialogues = load_dialogues(SENSEBENCH)
    assert len(dialogues) == 411
    topics = {dialogue.topic for dialogue in dialogues}
    assert topics == {"Writing", "Math", "QA", "NLU", "Logic", "Code", "Translation", "Role"}
    assert all(dialogue.request.strip() for dialogue in dialogues)
    assert sum(any(m.role == "assistant" for m in d.context) for d in dialogues) > 100  # real multi-turn context


def test_context_is_every_turn_before_the_last_request_and_later_answers_are_dropped(tmp_path):
    path = write(tmp_path, [[turn("System", "Be brief.", topic="sense_bmk:QA"), turn("Human", "Hi"),
                             turn("Assistant", "Hello", name="bot"), turn("Human", "Capital of France?"),
                             turn("Assistant", "Paris.")]])
    [dialogue] = load_dialogues(path)
    assert dialogue.topic == "QA" and dialogue.request == "Capital of France?"
    assert [(m.role, m.content) for m in dialogue.context] == [("system", "Be brief."), ("user", "Hi"),
                                                               ("assistant", "Hello")]


def test_messages_keep_the_latest_turns_that_fit_and_always_the_request(tmp_path):
    path = write(tmp_path, [[turn("Human", "a" * 50, topic="sense_bmk:Code"), turn("Assistant", "b" * 30),
                             turn("Human", "c" * 40)]])
    [dialogue] = load_dialogues(path)
    assert [m.content[0] for m in dialogue.messages()] == ["a", "b", "c"]
    assert [m.content[0] for m in dialogue.messages(max_chars=80)] == ["b", "c"]
    [request] = dialogue.messages(max_chars=20)
    assert len(request.content) == 20 and CUT in request.content
    assert request.content.startswith("c") and request.content.endswith("c")


@pytest.mark.parametrize(("dialogues", "where", "problem"), [
    ([{"from": "Human"}], "row 0", "valid list"),
    ([[turn("Robot", "hi", topic="sense_bmk:QA")]], "row 0, field 'turn[0].from'", "Input should be"),
    ([[turn("Human", "hi", topic="sense_bmk:QA"), {"from": "Human", "content": [{"type": "text"}]}]],
     "row 0, field 'turn[1].content[0].value'", "Field required"),
    ([[turn("Human", "hi")]], "row 0, field 'turn[0].topic'", "expected a topic"),
    ([[turn("Human", "ok", topic="sense_bmk:QA")], [turn("Assistant", "hi", topic="sense_bmk:QA")]], "row 1",
     "no Human turn"),
    ([[]], "row 0", "no turns"),
])
def test_malformed_dialogues_name_file_row_and_field(tmp_path, dialogues, where, problem):
    path = write(tmp_path, dialogues)
    with pytest.raises(DataError, match=problem) as raised:
        load_dialogues(path)
    assert str(raised.value).startswith(f"{path}, {where}")


def test_missing_wrong_and_broken_files_are_data_errors(tmp_path):
    with pytest.raises(DataError, match="file not found"):
        load_dialogues(tmp_path / "absent.json")
    with pytest.raises(DataError, match="expected SenseBench's JSON file"):
        load_dialogues(tmp_path / "dialogues.txt")
    broken = tmp_path / "broken.json"
    broken.write_text("[[", encoding="utf-8")
    with pytest.raises(DataError, match="not valid JSON"):
        load_dialogues(broken)

"""Each paper-scale experiment file decodes as docs/fidelity.md's decoding table says: the reference's value, or a
named deviation. The checker is also held against hand-made files it must reject. No model calls."""

from pathlib import Path

import pytest
from decoding_table import Row, normalized, problems, tables
from toml_files import write

from prefcraft.experiments.files import served_flag, vllm_serve_lines

ROOT = Path(__file__).parents[1]
FIDELITY = ROOT / "docs" / "fidelity.md"
SETTINGS_FILES = {"embedded.toml", "vllm-qwen7b.toml"}
PAPER_SCALE = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "experiments").glob("*.toml")
                     if path.name not in SETTINGS_FILES and not path.stem.endswith("-small"))
TABLES = tables(FIDELITY.read_text(encoding="utf-8"))


def test_every_paper_scale_file_has_a_decoding_table_and_no_other():
    assert sorted(TABLES) == PAPER_SCALE


@pytest.mark.parametrize("relative", PAPER_SCALE)
def test_the_file_decodes_as_its_table_says(relative):
    assert relative in TABLES, f"docs/fidelity.md has no table headed #### Decoding: {relative}"
    assert problems(ROOT / relative, TABLES[relative]) == []


FILE = """# A paper-scale file.
#   vllm serve org/model --port 8000 \\
#     --max-model-len 16384 --enforce-eager
name = "t"
component = "cupid"
[settings.task]
model = "hosted_vllm/org/model"
api_base = "http://127.0.0.1:8000/v1"
temperature = 0.7
max_tokens = 4096
[steps.evaluate]
data = "kixlab/CUPID"
"""


def row(setting, reference, prefcraft, read_from, status="same", source="org/repo run.py:12"):
    return Row({"call": "task", "setting": setting, "reference": reference, "reference source": source,
                "prefcraft": prefcraft, "read from": read_from, "status": status})


FAITHFUL = [row("temperature", "0.7", "0.7", "settings.task.temperature"),
            row("max_tokens", "4,096", "4096", "settings.task.max_tokens"),
            row("context length", "32768", "16384", "serve --max-model-len", "deviation: shorter — fits one GPU")]


def test_a_faithful_table_passes(tmp_path):
    assert problems(write(tmp_path, FILE), FAITHFUL) == []


@pytest.mark.parametrize(("rows", "expected"), [
    ([row("temperature", "0.7", "0.0", "settings.task.temperature"), *FAITHFUL[1:]],
     "the table says 0.0, settings.task.temperature is 0.7"),
    ([row("temperature", "0.0", "0.7", "settings.task.temperature"), *FAITHFUL[1:]], "'same', but 0.7"),
    ([*FAITHFUL[:2], row("context length", "32768", "16384", "serve --max-model-len", "differs")], "neither 'same'"),
    (FAITHFUL[1:], "settings.task.temperature is set in the file and no row describes it"),
    (FAITHFUL[:2], "no row gives its context length"),
    ([*FAITHFUL, row("top_p", "0.9", "0.9", "settings.task.top_p")],
     "the table says 0.9, settings.task.top_p is unset"),
    ([*FAITHFUL, row("temperature", "0", "0", "steps.compile.x")], "the file has no step compile"),
    ([*FAITHFUL, row("temperature", "0.7", "0.7", "settings.task.temperature", source="the paper")],
     "not 'owner/repo path:line'"),
])
def test_a_table_that_misdescribes_the_file_fails(tmp_path, rows, expected):
    found = problems(write(tmp_path, FILE), rows)
    assert any(expected in problem for problem in found), found


def test_serve_lines_are_read_from_the_comments_joined_over_continuations():
    lines = vllm_serve_lines(FILE)
    assert lines == ["vllm serve org/model --port 8000 --max-model-len 16384 --enforce-eager"]
    assert served_flag(lines, "--max-model-len") == "16384"
    assert served_flag(lines, "--enforce-eager") == "on"
    assert served_flag(lines, "--generation-config") is None
    assert served_flag(lines, "--port", "org/model") == "8000"
    with pytest.raises(LookupError):
        served_flag(lines, "--port", "other/model")


def test_cells_compare_as_values():
    assert normalized("8,192") == normalized(8192) == 8192.0
    assert normalized(None) == "unset" and normalized(True) == "on"

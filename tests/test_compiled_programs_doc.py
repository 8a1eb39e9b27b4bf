"""docs/compiled-programs.md's Python examples, each run as it is on the embedded server, from a working directory
that holds what they read: a user's judge in runs/fitted/ and the same judge registered in ./mlflow.db."""

import re
from pathlib import Path

import mlflow
import pytest

from prefcraft.components.synthesizeme.evaluation import PERSONAL_JUDGE
from prefcraft.optimizers.artifacts import save_compiled
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.tracking.models import log_program, registered_name

DOC = Path(__file__).resolve().parents[1] / "docs" / "compiled-programs.md"
SECTIONS = re.split(r"^## ", DOC.read_text(encoding="utf-8"), flags=re.MULTILINE)[1:]
EXAMPLES = [(section.split("\n", 1)[0], code[0]) for section in SECTIONS
            if (code := re.findall(r"^```python\n(.*?)^```$", section, re.MULTILINE | re.DOTALL))]
USER, MODEL = "sample_user_07", "SmolLM2-135M-Instruct"


def test_the_page_has_its_examples():
    assert [title for title, _ in EXAMPLES] == ["Load a program from the registry", "Best of n for one user",
                                                "A reward function for GRPO"]


@pytest.mark.server
@pytest.mark.parametrize(("title", "code"), EXAMPLES, ids=[title for title, _ in EXAMPLES])
def test_the_example_runs(title, code, embedded_server, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for name, value in {"TASK__API_BASE": embedded_server.base_url, "TASK__MAX_TOKENS": "256",
                        "CACHE_DIR": str(tmp_path / "cache")}.items():
        monkeypatch.setenv(f"PREFCRAFT_{name}", value)
    path = save_compiled(PreferenceJudge("Likes short, direct answers."), Path("runs/fitted") / f"{USER}.json",
                         program_name=PERSONAL_JUDGE, user_id=USER, persona="Likes short, direct answers.")
    mlflow.set_tracking_uri("sqlite:///mlflow.db")  # what the example reads: MLflow's default store, here
    mlflow.set_experiment("compiled-programs")  # not the experiment id an earlier test's store left as active
    try:
        with mlflow.start_run():
            log_program(path, name=PERSONAL_JUDGE, request=None, metadata={"user_id": USER},
                        promote_as=registered_name(PERSONAL_JUDGE, MODEL, USER))
        exec(compile(code, f"{DOC.name}: {title}", "exec"), {})
    finally:
        mlflow.set_tracking_uri(None)
    assert capsys.readouterr().out.strip()

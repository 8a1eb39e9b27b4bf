"""Output streams: results alone on stdout; DSPy's bar and every log on stderr; third-party info lines and printed
source code only with --verbose; DSPy's error lines without the example's gold fields."""

import logging

import dspy
import pytest
from openai_standin import StandInServer

from prefcraft.commands.main import main
from prefcraft.console import HANDLER_NAME, configure_logging, echo, results_on_stdout


@pytest.fixture(autouse=True)
def restore_logging(monkeypatch):
    monkeypatch.delenv("MLFLOW_LOGGING_LEVEL", raising=False)
    root = logging.getLogger()
    named = ["dspy", "bm25s", "optuna", "mlflow", "LiteLLM", "alembic"]
    levels = {name: logging.getLogger(name).level for name in named}
    root_level = root.level
    yield
    root.setLevel(root_level)
    for handler in [h for h in root.handlers if h.get_name() == HANDLER_NAME]:
        root.removeHandler(handler)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


class Failing(dspy.Module):
    def forward(self, question):
        raise ValueError("the server said no")


def test_dspy_s_bar_goes_to_stderr_and_its_error_lines_hide_the_gold_fields(capsys):
    configure_logging(verbose=False)
    devset = [dspy.Example(instance_id="p1/consistent/0", question="q", gold_preference="GOLD-SECRET")
              .with_inputs("question")]
    with results_on_stdout():
        evaluate = dspy.Evaluate(devset=devset, metric=lambda example, prediction, trace=None: 1.0, num_threads=1,
                                 display_progress=True, max_errors=5, failure_score=0.0, provide_traceback=False)
        evaluate(Failing())
        echo("RESULT TABLE")
    captured = capsys.readouterr()
    assert captured.out == "RESULT TABLE\n"
    assert "Average Metric" in captured.err  # DSPy's bar, which it draws on sys.stdout
    assert "Error for example instance_id=p1/consistent/0 (fields not shown): the server said no" in captured.err
    assert "GOLD-SECRET" not in captured.err


def test_bootstrap_s_error_lines_hide_the_example_too(capsys):
    configure_logging(verbose=False)
    example = dspy.Example(question="q", gold_preference="GOLD-SECRET").with_inputs("question")
    logging.getLogger("dspy.teleprompt.bootstrap").error(
        f"Failed to run or to evaluate example {example} with <metric> due to boom.")  # DSPy's own wording
    error = capsys.readouterr().err
    assert "Failed to run or to evaluate example an example (fields not shown) with <metric> due to boom." in error
    assert "GOLD-SECRET" not in error


class InferPreference(dspy.Signature):
    """Infer the user's preference."""

    request: str = dspy.InputField()
    preference: str = dspy.OutputField()


class Inferrer(dspy.Module):
    def __init__(self):
        super().__init__()
        self.infer = dspy.Predict(InferPreference)

    def forward(self, request):
        return self.infer(request=request)


def test_printed_lines_such_as_miprov2_s_program_source_are_shown_with_verbose_only(capsys):
    from dspy.propose.utils import get_dspy_source_code  # MIPROv2's program-aware proposer calls it; it prints

    for verbose in (False, True):
        configure_logging(verbose)
        with results_on_stdout():
            get_dspy_source_code(Inferrer())
            print("no newline at the end", end="")
        captured = capsys.readouterr()
        assert captured.out == ""
        assert ("output: class InferPreference(dspy.Signature):" in captured.err) is verbose
        assert ("output: no newline at the end" in captured.err) is verbose


def test_third_party_info_lines_are_hidden_unless_verbose(capsys):
    def log_everything():
        logging.getLogger("bm25s").debug("bm25s debug line")  # bm25s sets its logger to DEBUG on import
        logging.getLogger("some_library").info("library info line")
        logging.getLogger("dspy.teleprompt").info("dspy info line")
        logging.getLogger("some_library").warning("library warning")
        logging.getLogger("prefcraft.commands").info("prefcraft info line")

    configure_logging(verbose=False)
    log_everything()
    quiet = capsys.readouterr().err
    assert "library warning" in quiet and "prefcraft info line" in quiet
    assert not any(line in quiet for line in ("bm25s debug line", "library info line", "dspy info line"))
    configure_logging(verbose=True)
    log_everything()
    loud = capsys.readouterr().err
    assert all(line in loud for line in ("bm25s debug line", "library info line", "dspy info line"))


def test_a_command_s_stdout_holds_its_results_only(tmp_path, capsys):
    server = StandInServer()
    try:
        code = main(["cupid", "evaluate", "--no-serve", "--task-api-base", server.api_base, "--max-instances", "1",
                     "--responses", "baseline", "--no-shipped", "--threads", "1", "--output-dir", str(tmp_path / "out"),
                     "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db", "--cache-dir", str(tmp_path / "cache")])
    finally:
        server.close()
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Average Metric" not in captured.out and "Average Metric" in captured.err
    assert " INFO " not in captured.out and "\r" not in captured.out
    assert captured.out.strip(), "the result table"

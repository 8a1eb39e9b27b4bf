"""Where a command's output goes: results on stdout, progress bars and logs on stderr, third-party libraries' info and
debug lines only with --verbose, and no gold labels in DSPy's error lines.

Results reach stdout through `echo` alone. While a command runs (`results_on_stdout`), sys.stdout is a `StrayOutput`:
what other code writes there is no result. DSPy's Evaluate draws its progress bar on sys.stdout and MIPROv2's proposer
prints the program's source code with print(); the bar goes to stderr, the printed lines to a debug log.
"""

from __future__ import annotations

import io
import logging
import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

logger = logging.getLogger(__name__)

OWN_LOGGERS = ("prefcraft",)
# DSPy loggers whose error lines hold whole examples: the executor's "Error for <example>: ..." and the bootstrap's
# "Failed to run or to evaluate example <example> ...".
EXAMPLE_LOGGERS = ("dspy.utils.parallelizer", "dspy.teleprompt.bootstrap")
# Libraries that set their own level or handler when imported; every other library's records are filtered at the
# handler (QuietThirdParty) whatever level its logger has.
OWN_LEVEL_LOGGERS = ("dspy", "LiteLLM", "optuna", "mlflow", "alembic", "bm25s")
HANDLER_NAME = "prefcraft"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(verbose: bool) -> None:
    """Logs on stderr: prefcraft's from INFO (DEBUG with `verbose`), third-party libraries' from WARNING (everything
    with `verbose`). DSPy's error lines name an example by its id instead of printing its fields."""
    root = logging.getLogger()
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    for handler in [h for h in root.handlers if h.get_name() == HANDLER_NAME]:
        root.removeHandler(handler)
    handler = CurrentStderr()
    handler.set_name(HANDLER_NAME)
    handler.setFormatter(logging.Formatter(LOG_FORMAT, datefmt="%H:%M:%S"))
    if not verbose:
        handler.addFilter(QuietThirdParty())
    root.addHandler(handler)
    third_party = logging.DEBUG if verbose else logging.WARNING
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", logging.getLevelName(third_party))  # read as mlflow is imported
    import dspy  # noqa: F401  (dspy and optuna set their loggers' levels on import: set them after)
    import optuna

    optuna.logging.set_verbosity(third_party)
    for name in OWN_LEVEL_LOGGERS:
        logging.getLogger(name).setLevel(third_party)
    for name in EXAMPLE_LOGGERS:
        if not any(isinstance(f, HiddenExamples) for f in logging.getLogger(name).filters):
            logging.getLogger(name).addFilter(HiddenExamples())


class CurrentStderr(logging.StreamHandler):
    """A handler writing to whatever sys.stderr is when a record comes, not to the stream it was made with: a command
    run within another program that swaps sys.stderr (a notebook, a test's capture) logs where that program reads."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property  # type: ignore[override]
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


class QuietThirdParty(logging.Filter):
    """Passes prefcraft's records and the warnings and errors of everything else."""

    def filter(self, record: logging.LogRecord) -> bool:
        own = record.name.split(".", 1)[0] in OWN_LOGGERS
        return own or record.levelno >= logging.WARNING


class HiddenExamples(logging.Filter):
    """Each example a record's message shows whole (`Example({...}) (input_keys=...)`, gold fields included) is
    replaced by its ids (its fields named *_id), or by "an example"."""

    EXAMPLE = re.compile(r"Example\(\{(?P<fields>.*?)\}\) \(input_keys=(?:None|set\(\)|\{[^}]*\})\)", re.DOTALL)
    IDS = re.compile(r"'(\w+_id)': '([^']*)'")

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        hidden = self.EXAMPLE.sub(self._named, message)
        if hidden != message:
            record.msg, record.args = hidden, ()
        return True

    def _named(self, match: re.Match[str]) -> str:
        ids = ", ".join(f"{key}={value}" for key, value in self.IDS.findall(match["fields"]))
        return f"example {ids} (fields not shown)" if ids else "an example (fields not shown)"


class StrayOutput(io.TextIOBase):
    """sys.stdout while a command runs. Progress bars (tqdm redraws its line with a leading carriage return) go to
    `bars`; any other text is logged line by line at DEBUG. `results` is the real stdout, which `echo` writes to."""

    def __init__(self, results: TextIO, bars: TextIO):
        super().__init__()
        self.results, self.bars = results, bars
        self._line = ""
        self._bar_open = False
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            if text.startswith("\r") or (self._bar_open and text == "\n"):
                self.bars.write(text)
                self._bar_open = text != "\n"
            elif text:
                self._line += text
                *lines, self._line = self._line.split("\n")
                for line in lines:
                    logger.debug("output: %s", line)
        return len(text)

    def flush(self) -> None:
        self.bars.flush()

    def close_line(self) -> None:
        """Logs a last line that was written without its newline."""
        if self._line:
            self.write("\n")

    def isatty(self) -> bool:
        return self.bars.isatty()

    def fileno(self) -> int:  # tqdm measures the terminal's width through it
        return self.bars.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.bars, "encoding", None) or "utf-8"


@contextmanager
def results_on_stdout() -> Iterator[None]:
    """Within: `echo` writes to stdout, and what anything else writes to sys.stdout goes to stderr or the debug log."""
    stray = StrayOutput(sys.stdout, sys.stderr)
    sys.stdout = stray
    try:
        yield
    finally:
        stray.close_line()
        sys.stdout = stray.results


def echo(text: str) -> None:
    """Writes a result (a report, a table, a written file's path) to stdout."""
    stream = sys.stdout.results if isinstance(sys.stdout, StrayOutput) else sys.stdout
    print(text, file=stream, flush=True)

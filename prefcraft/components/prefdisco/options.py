"""The PrefDisco steps' options: each step's job, read directly by its work (`build`, `compilation`, `evaluation`); its
flags, experiment options and `prefcraft.run` arguments are made from it."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from prefcraft.components.prefdisco.data import SAMPLE_SCENARIOS
from prefcraft.optimizers.options import optimizer_options
from prefcraft.options import Count, FilePath, Options, Positive, SampleSource, Share, SplitOrAll, option
from prefcraft.programs.prefdisco import DEFAULT_MAX_TURNS

RUNS = Path("runs/prefdisco")
"""Where every step writes by default."""


class BuildOptions(Options):
    problems: FilePath | None = option(None, "JSONL of {task, problem_id, original_problem} rows (default: the "
                                       "bundled problems (math, science, social reasoning))")
    output: FilePath = option(RUNS / "scenarios.jsonl", "scenario JSONL to write")
    personas: Positive = option(8, "distinct personas to sample (seeded by --seed)")
    personas_per_problem: Positive = option(2, "scenarios per problem, each with another persona")
    attributes: Positive = option(2, "attributes in each sparse profile")


class _Source(Options):
    data: str | None = option(None, "stellalisy/prefq-bench, a local folder in its layout "
                              "(benchmark_1k/<task>/*.jsonl) or a local scenario .jsonl/.json/.parquet file (default: "
                              "the bundled SYNTHETIC scenarios)")


class DataOptions(SampleSource):
    """Which scenarios a step reads: a reference JSONL file or hub dataset, split by problem within each task."""

    sample: ClassVar[Path] = SAMPLE_SCENARIOS
    renamed_options: ClassVar[dict[str, str]] = {"per_task": "max_per_task"}

    val_share: Share = option(0.25, "share of each task's problems for validation")
    test_share: Share = option(0.25, "share of each task's problems for testing")
    max_scenarios: Positive | None = option(
        None, "use only the first N scenarios of the split (default: every scenario)")
    max_per_task: Positive | None = option(
        None, "use only the first N scenarios of each task in the split (default: every scenario)")
    output_dir: FilePath = option(RUNS, "where results go")
    max_turns: Positive = option(DEFAULT_MAX_TURNS, "the asker's turn budget (questions it may ask)")


# Labeled demos would be raw scenarios, which hold no dialogue: none by default. A bootstrapped trace counts as a demo
# from a gated PrefAlign / 5 of 0.6.
class CompileOptions(optimizer_options(candidates=20, trials=30, bootstrapped_demos=4, labeled_demos=0,
                                       metric_threshold=0.6), DataOptions, _Source):
    output: FilePath = option(RUNS / "prefdisco_asker.json",
                              "where the compiled asker goes, won or lost (the verdict in its "
                              "metadata); under compiled/ a winner is registered as the shipped asker")


class _Conditions(DataOptions):
    split: SplitOrAll = option(
        "test", "which scenarios to evaluate: a split by problem within each task, or all")
    forced_questions: Count | None = option(
        None, "ask for exactly this many turns, with the paper's fixed-count prompt (Figure 5), instead of deciding "
        "(default: none, the asker decides when to answer)")
    collaborative: bool = option(False, "the collaborative user simulator instead of the passive one")
    greedy_correctness: bool = option(
        False, "judge correctness at temperature 0, as the reference's prompt asks (its client sent the judge's "
        "configured 0.7 instead, the default here)")
    compiled: FilePath | None = option(
        None, "compiled asker to compare: a JSON file or an MLflow model URI (models:/<name>@champion) (default: "
        "the one compiled/index.json registers for the task model, if any)")
    use_shipped: bool = option(True, "without --compiled, compare no compiled asker", flag="--no-shipped")


class EvaluateOptions(_Conditions, _Source):
    pass


class DemoOptions(_Conditions):
    """Evaluate on the bundled scenarios, one of each task, with a small turn budget."""

    max_per_task: Positive | None = option(1, "use only the first N scenarios of each task in the split")
    max_turns: Positive = option(2, "the asker's turn budget (questions it may ask)")


ConditionsOptions = EvaluateOptions | DemoOptions

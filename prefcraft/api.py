"""prefcraft from Python: run any component's step, load any compiled program, and SynthesizeMe's own helpers (fit
users, load a fitted judge and ask it which response its user prefers, evaluate methods).

Models come from `Settings`; without, from what the command line reads without flags: the defaults (the embedded
model), then the `PREFCRAFT_*` variables. `models(settings)` reaches them, starting the embedded server when a model
has no `api_base` and stopping it when the block ends; programs called inside the block run on the task model. `run`
is `prefcraft <component> <step>`, and `fit` and `evaluate` are `prefcraft synthesizeme fit` and `prefcraft
synthesizeme evaluate`: give them the settings the block yields and they use its server (without, each starts its
own). See docs/python-api.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import dspy

from prefcraft.components.synthesizeme import rerank
from prefcraft.components.synthesizeme.evaluation import MethodOutcome
from prefcraft.components.synthesizeme.fit import FitSummary
from prefcraft.components.synthesizeme.judge_sets import ValidationOrders
from prefcraft.components.synthesizeme.options import DemographicsJudge, EvaluateOptions, FitOptions
from prefcraft.components.synthesizeme.personal_judge import Conversation, PersonalJudge
from prefcraft.components.synthesizeme.personal_judge import load_judge as load_judge  # the API's, re-exported
from prefcraft.components.synthesizeme.population import TABLE_POPULATION, Population
from prefcraft.components.synthesizeme.rerank import Choice, Tournament
from prefcraft.components.synthesizeme.samples import SAMPLE_USERS
from prefcraft.engine.session import lm_context, model_session
from prefcraft.errors import CompiledProgramError, ConfigError
from prefcraft.executors import Executor
from prefcraft.flags import settings_flag_names
from prefcraft.optimizers.artifacts import load_compiled, local_program, read_metadata
from prefcraft.optimizers.synthesizeme import SynthesizeMeConfig
from prefcraft.options import Options, check_options
from prefcraft.registry import COMPONENTS
from prefcraft.runner import run_step
from prefcraft.settings import Settings, load_settings

DEFAULT_FITTED_DIR: Path = FitOptions.model_fields["fitted_dir"].default
DEFAULT_RESULTS_DIR: Path = EvaluateOptions.model_fields["output_dir"].default


class _FitOptions(FitOptions):
    """`fit`'s options: the fit step's, its search given as a `SynthesizeMeConfig` when `config` is."""

    config: SynthesizeMeConfig | None = None

    def search_config(self, settings: Settings) -> SynthesizeMeConfig:
        """The command's search config (these options and `settings`: threads, seed, the small-model demo cap), with
        each field `config` sets away from its default in its place."""
        from_settings = super().search_config(settings)
        if self.config is None:
            return from_settings
        default = SynthesizeMeConfig()
        chosen = {field.name: getattr(self.config, field.name) for field in fields(SynthesizeMeConfig)
                  if getattr(self.config, field.name) != getattr(default, field.name)}
        return replace(from_settings, **chosen)


@contextmanager
def models(settings: Settings | None = None) -> Iterator[Settings]:
    """Yields `settings` with every model reachable; judges called inside the block run on the task model."""
    with model_session(settings or load_settings()) as session, lm_context(session, "task"):
        yield session



def run(component: str, step: str, settings: Settings | None = None, **options: Any) -> Any:
    """`prefcraft <component> <step>`: `options` are the step's flags by dest, as an experiment file gives them
    (`max_instances=1` is `--max-instances 1`), checked against the step's job type and over its defaults. Without
    `settings`, the command's (see above). Writes the step's report to stdout as the command does and returns its
    outcome."""
    if component not in COMPONENTS:
        raise ConfigError(f"unknown component '{component}'", f"choose one of {', '.join(COMPONENTS)}")
    steps = COMPONENTS[component].steps
    if step not in steps:
        raise ConfigError(f"'{step}' is not a step of {component}", f"its steps: {', '.join(steps)}")
    checked = _checked(steps[step].options, options, f"prefcraft.run('{component}', '{step}')", component, step)
    return run_step(component, step, checked, settings or load_settings())


def _checked(options: type[Options], given: dict[str, Any], call: str, component: str, step: str) -> Options:
    """`given` as the step's options, or one ConfigError naming every problem."""
    problems: list[str] = []
    given = {name: str(value) if isinstance(value, Path) else value for name, value in given.items()}
    checked = check_options(options, given, (), f"'prefcraft {component} {step}'", problems, settings_flag_names())
    if checked is None:
        raise ConfigError(f"{call}: {'; '.join(problems)}",
                          f"options are the step's flags, '-' written '_': see `prefcraft {component} {step} --help`")
    return checked


def compile(component: str, settings: Settings | None = None, **options: Any) -> Any:
    """`prefcraft <component> compile` (CUPID, LaMP-QA, PrefDisco): `run(component, "compile", ...)`."""
    return run(component, "compile", settings, **options)


@dataclass
class Loaded:
    """A compiled program as `load` read it: the program, ready to call, and its file's metadata."""

    program: dspy.Module
    metadata: dict[str, Any]


def load(path: str | Path) -> Loaded:
    """The compiled program prefcraft saved at `path` (a file, or a model URI such as `models:/<name>@champion` read
    from MLflow's current store), whichever it is (a SynthesizeMe judge or persona prompt, a
    SenseJudge judge, a CUPID inferrer, a LaMP-QA PlanPers, a PrefDisco asker): built as its metadata says, its state
    loaded. It runs on the LM of the current dspy context (inside `models()`, the task model)."""
    path = local_program(path)
    metadata = read_metadata(path)
    name = metadata.get("program")
    builders = {program: build for component in COMPONENTS.values() for program, build in component.programs.items()}
    if name not in builders:
        holds = f"a compiled '{name}', a program prefcraft does not know" if name else "no program name in its metadata"
        raise CompiledProgramError(f"{path} holds {holds}", f"prefcraft loads {', '.join(sorted(builders))}")
    program = builders[name](metadata)
    load_compiled(program, path, program_name=name)
    return Loaded(program, metadata)

def best_of_n(judge: PersonalJudge, conversation: Conversation, candidates: Sequence[str],
              tournament: Tournament = "round_robin") -> Choice:
    """Which of `candidates` the judge's user is predicted to prefer, each comparison judged in both orders: a round
    robin of every pair, or a knockout (fewer calls; `prefcraft synthesizeme best-of-n`). The `Choice` holds the
    index, each candidate's orders won and the calls made. Runs on the LM of the current dspy context."""
    return rerank.best_of_n(judge.prefers, conversation, candidates, tournament)


def judge_reward(judge: PersonalJudge, reference_column: str = "reference") -> Callable[..., list[float]]:
    """The judge as a reward function for TRL's `GRPOTrainer` (`reward_funcs=[...]`): each completion against the
    dataset's reference completion (`reference_column`), judged in both orders; 1.0, 0.5 or 0.0."""
    return rerank.reward_function(judge.prefers, reference_column)


def fit(
    settings: Settings | None = None, *, data: str | Path = SAMPLE_USERS, users: Sequence[str] | None = None,
    population: Population = TABLE_POPULATION, fitted_dir: str | Path = DEFAULT_FITTED_DIR,
    persona_prompt: str | Path | None = None, config: SynthesizeMeConfig | None = None,
    val_orders: ValidationOrders = "one_order", executor: Executor = "local", address: str | None = None,
    workers: int | None = None,
) -> FitSummary:
    """Fit a SynthesizeMe judge for each user of `data` (default: all; of a dataset, its `population` of users) into
    `fitted_dir/<user>.json`, skipping users fitted before with the same data, model and settings. Without
    `persona_prompt`, the one prefcraft ships for the task model. The search is the command's (the paper's, n = m = 10,
    with the settings' threads and seed and, for a small model, its demo cap); each field `config` sets away from its
    default replaces the command's. `val_orders`: `--val-orders`. `executor="processes"` fits each user in one of
    `workers` processes of this machine, `executor="ray"` as a Ray task on the cluster at `address`
    (`prefcraft synthesizeme fit --executor ray --address ...`)."""
    options = _checked(_FitOptions, {"data": data, "users": _listed(users), "population": population,
                                      "fitted_dir": fitted_dir, "persona_prompt": persona_prompt, "config": config,
                                      "val_orders": val_orders, "executor": executor, "address": address,
                                      "workers": workers},
                       "prefcraft.fit", "synthesizeme", "fit")
    return run_step("synthesizeme", "fit", options, settings or load_settings(), _unreported)


def evaluate(
    settings: Settings | None = None, *, data: str | Path = SAMPLE_USERS, methods: Sequence[str] = ("baseline",),
    users: Sequence[str] | None = None, population: Population = TABLE_POPULATION,
    fitted_dir: str | Path = DEFAULT_FITTED_DIR, split: str = "test", output_dir: str | Path = DEFAULT_RESULTS_DIR,
    demographics: str | Path | None = None, demographics_judge: DemographicsJudge = "dong",
    allow_fitted_pairs: bool = False, executor: Executor = "local", address: str | None = None,
    workers: int | None = None,
) -> dict[str, MethodOutcome]:
    """Judge each user's `split` pairs in both orders with every method (`baseline`, the paper's Default, `memory`,
    `demographics` from the PRISM survey or a local copy given as `demographics`, judged as `demographics_judge` says,
    and from the judges in `fitted_dir`: `demos`, `persona`, `synthesizeme`); each outcome's `report` holds accuracy
    with its interval.
    `population`: which of a dataset's user splits to read. `allow_fitted_pairs` lets the methods that learned from
    the train and val pairs judge them (optimistic: for debugging).
    Each method's judgments are written to `output_dir/judgments-<method>.jsonl` as soon as it is done, as
    `prefcraft synthesizeme evaluate` writes them: a failure later keeps them, and a rerun repeats no answered call
    (DSPy's cache).
    `executor="processes"` judges each user and method in one of `workers` processes of this machine,
    `executor="ray"` as a Ray task on the cluster at `address`."""
    options = _checked(EvaluateOptions, {"data": data, "methods": list(methods), "users": _listed(users),
                                         "population": population, "fitted_dir": fitted_dir, "split": split,
                                         "output_dir": output_dir, "demographics": demographics,
                                         "demographics_judge": demographics_judge,
                                         "allow_fitted_pairs": allow_fitted_pairs, "executor": executor,
                                         "address": address, "workers": workers},
                       "prefcraft.evaluate", "synthesizeme", "evaluate")
    return run_step("synthesizeme", "evaluate", options, settings or load_settings(), _unreported)


def _listed(users: Sequence[str] | None) -> list[str] | None:
    """`users` as the step's option takes them: a list, or None for all."""
    return list(users) if users else None


def _unreported(line: str) -> None:
    """`fit` and `evaluate` return their outcomes and print nothing."""

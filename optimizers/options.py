"""A compile step's optimizer options (the flags, experiment options and `prefcraft.run` arguments of its optimizer
group) and the optimizer config they make."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Literal

from pydantic import create_model

from prefcraft.optimizers.prompt_optimizer import CONFIGS, MIPROv2Config, OptimizerConfig
from prefcraft.options import Count, Options, Positive, option

CONFIG_FIELDS = {"candidates": "num_candidates", "trials": "num_trials",
                 "max_bootstrapped_demos": "max_bootstrapped_demos", "max_labeled_demos": "max_labeled_demos",
                 "max_metric_calls": "max_metric_calls", "metric_threshold": "metric_threshold"}
"""Each optimizer option and the config field it sets, in every config that has that field."""
FROM_SETTINGS = {"num_threads": "threads", "seed": "seed"}
"""The config fields the settings fill, and the setting each takes."""


def optimizer_options(*, candidates: int, trials: int, bootstrapped_demos: int, labeled_demos: int,
                      metric_calls: int = 400, metric_threshold: float | None = 0.5,
                      threshold_help: str = "", budget_from: str | None = None) -> type[Options]:
    """Which DSPy optimizer compiles the program, and its budget, given by the step; `budget_from` names the paper
    the MIPROv2 budget comes from, when one gives it (SynthesizeMe's App. F), else none is claimed. A step whose metric
    sets its own threshold gives `metric_threshold` None and says which in `threshold_help`; it sets the config's."""
    source = f"; {budget_from}: {{}}" if budget_from else ""
    group = "optimizer"
    return create_model(
        "OptimizerOptions", __base__=Options,
        optimizer=(Literal[tuple(CONFIGS)], option(
            MIPROv2Config.name, "miprov2 (DSPy's MIPROv2: instructions and demos together), gepa (reflective; the "
            "prompt model reflects) or bootstrap_rs (random demo sets, the cheap baseline)", group=group)),
        candidates=(Positive, option(candidates, "instruction candidates (miprov2) or demo sets (bootstrap_rs)"
                                     f"{source.format(candidates)}", group=group)),
        trials=(Positive, option(trials, f"miprov2 trials{source.format(trials)}", group=group)),
        max_bootstrapped_demos=(Count, option(bootstrapped_demos, "demos bootstrapped from the program's own "
                                              "successful traces, per predictor", group=group)),
        max_labeled_demos=(Count, option(labeled_demos, "demos taken as they are from the training examples, per "
                                         "predictor", group=group)),
        max_metric_calls=(Positive, option(metric_calls, "gepa's budget", group=group)),
        metric_threshold=(float | None, option(metric_threshold, "the score at which a bootstrapped trace counts as "
                                               f"a demo{threshold_help}", group=group)),
    )  # fmt: skip


def optimizer_config(options: Any, settings: Any, **defaults: Any) -> OptimizerConfig:
    """The config of the optimizer `options.optimizer` names, each of its fields from the option that sets it (or from
    `defaults` where that option is unset: a step whose metric sets its own threshold); the seed and concurrency come
    from the settings (where the optimizer takes them)."""
    config = CONFIGS[options.optimizer]
    names = {field.name for field in fields(config)}
    values = {name: getattr(options, option) for option, name in CONFIG_FIELDS.items()
              if name in names and getattr(options, option) is not None}
    values |= {name: value for name, value in defaults.items() if name in names and name not in values}
    values |= {name: getattr(settings, setting) for name, setting in FROM_SETTINGS.items() if name in names}
    return config(**values)

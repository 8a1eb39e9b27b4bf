"""prefcraft: DSPy programs that personalize an LLM to one user, and the machinery that compiles them.

This package is the core: settings, model backends, the structured-output adapter, loaders, metrics, MLflow glue and
the command line. Signatures, programs, optimizers and compiled programs are top-level packages of their own.

`prefcraft.run`, `prefcraft.compile`, `prefcraft.load`, `prefcraft.models` and SynthesizeMe's `prefcraft.fit`,
`prefcraft.load_judge`, `prefcraft.evaluate`, `prefcraft.best_of_n` and `prefcraft.judge_reward` are the Python API
(`prefcraft.api`, docs/python-api.md).
"""

__version__ = "0.1.0"
__all__ = ["Loaded", "PersonalJudge", "Settings", "SynthesizeMeConfig", "best_of_n", "compile", "evaluate", "fit",
           "judge_reward", "load", "load_judge", "models", "run"]


def __getattr__(name: str) -> object:
    # The API imports dspy, which takes seconds: it loads on first use, so `import prefcraft` stays fast.
    if name in __all__:
        from prefcraft import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

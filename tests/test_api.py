"""The Python API: a cheap `import prefcraft`, a loaded judge answering on a scripted LM, and the README's example on
the embedded server."""

import json
import subprocess
import sys

import dspy
import pytest
from dspy.utils.dummies import DummyLM
from openai_standin import StandInServer

import prefcraft
from prefcraft import api
from prefcraft.components.synthesizeme.evaluation import PERSONAL_JUDGE
from prefcraft.errors import ConfigError
from prefcraft.optimizers.artifacts import save_compiled
from prefcraft.programs.judge import PreferenceJudge
from prefcraft.settings import ModelSettings, Settings


def test_importing_prefcraft_leaves_dspy_unimported_until_the_api_is_used():
    check = ("import sys, prefcraft; assert 'dspy' not in sys.modules; prefcraft.fit; "
             "assert 'dspy' in sys.modules")
    subprocess.run([sys.executable, "-c", check], check=True)


def test_every_public_name_is_the_api_s_own():
    assert all(getattr(prefcraft, name) is getattr(api, name) for name in prefcraft.__all__)
    with pytest.raises(AttributeError, match="no attribute 'fitt'"):
        prefcraft.fitt  # noqa: B018



def test_run_checks_the_step_and_its_options_before_running_anything():
    with pytest.raises(ConfigError, match="max_instancez: unknown option of 'prefcraft cupid evaluate'"):
        prefcraft.run("cupid", "evaluate", max_instancez=1)
    with pytest.raises(ConfigError, match="max_instances: Input should be greater than or equal to 1"):
        prefcraft.run("cupid", "evaluate", max_instances=0)
    with pytest.raises(ConfigError, match="'compile' is not a step of synthesizeme"):
        prefcraft.compile("synthesizeme")
    with pytest.raises(ConfigError, match="unknown component 'cupidd'"):
        prefcraft.run("cupidd", "evaluate")

def test_a_loaded_judge_says_which_response_its_user_prefers(tmp_path):
    path = save_compiled(PreferenceJudge("Likes short answers."), tmp_path / "u1.json", program_name=PERSONAL_JUDGE,
                         user_id="u1", persona="Likes short answers.")
    judge = prefcraft.load_judge(path)
    lm = DummyLM({"[[ ## second_completion ## ]]": {"reasoning": "It is shorter.", "preference": "Second"}})
    with dspy.context(lm=lm):
        assert judge.prefers("How do I boil an egg?", "Boil it, then peel it and eat it.", "Boil it.") == "Second"
        messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
                    {"role": "user", "content": "Dinner idea?"}]
        assert judge.prefers(messages, "Pasta.", "Soup.") == "Second"
    assert judge.persona == "Likes short answers."
    prompts = [call["messages"][-1]["content"] for call in lm.history]
    assert "[user]: How do I boil an egg?" in prompts[0]
    assert "[user]: Hi\n[assistant]: Hello!\n[user]: Dinner idea?" in prompts[1]


def write_rows(path, users):
    path.write_text("".join(json.dumps(pair.model_dump()) + "\n" for user in users
                            for pair in user.train + user.val + user.test))
    return path


@pytest.mark.server
def test_the_readme_example_runs(embedded_model, user_with, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the example's runs/, mlflow.db and .prefcraft/ land here
    # The README's first lines, pointed at the test server and a small user:
    settings = prefcraft.Settings(task=embedded_model, threads=2)
    data, user = write_rows(tmp_path / "pairs.jsonl", [user_with(2, 1)]), "u1"
    # The README's example from here on, as it is:
    with prefcraft.models(settings) as session:
        search = prefcraft.SynthesizeMeConfig(num_persona_subsets=2, num_demo_candidates=2)
        fitted = prefcraft.fit(session, data=data, users=[user], config=search)
        judge = prefcraft.load_judge(fitted.judges[user])
        print(judge.prefers("How do I boil an egg?", "Boil it for nine minutes.",
                            "Put the egg in boiling water for nine minutes, then cool it in cold water and peel it."))
        outcomes = prefcraft.evaluate(session, data=data, users=[user], methods=["baseline", "synthesizeme"])
        for method, outcome in outcomes.items():
            print(method, outcome.report.accuracy)

    printed = capsys.readouterr().out.splitlines()
    assert printed.count("First") + printed.count("Second") == 1
    assert [line.split()[0] for line in printed if line.startswith(tuple(outcomes))] == ["baseline", "synthesizeme"]
    assert judge.persona.strip() and (tmp_path / "runs" / "fitted" / "u1.json").is_file()
    assert all(outcome.report.accuracy.n == 4 for outcome in outcomes.values())  # 2 test pairs, both orders


def test_evaluate_keeps_each_method_s_judgments_as_the_command_does(tmp_path):
    server = StandInServer()
    try:
        settings = Settings(task=ModelSettings(api_base=server.api_base), serve=False, cache_dir=tmp_path / "cache",
                            tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
        outcomes = prefcraft.evaluate(settings, users=["sample_user_01"], fitted_dir=tmp_path / "fitted",
                                      output_dir=tmp_path / "results")
    finally:
        server.close()
    judgments = (tmp_path / "results" / "judgments-baseline.jsonl").read_text().splitlines()
    assert len(judgments) == len(outcomes["baseline"].judgments) == len(server.bodies) > 0


@pytest.fixture
def captured_step(monkeypatch):
    """`fit` and `evaluate` checked and handed to the runner, which records them instead of running them."""
    handed: list = []
    monkeypatch.setattr(api, "run_step", lambda component, step, options, settings, emit: handed.append(
        (options, settings)))
    return handed


SMALL = Settings(task=ModelSettings(api_base="http://127.0.0.1:9/v1"), serve=False, threads=3, seed=7,
                 small_model={"enabled": True, "max_demos": 3})


def test_fit_takes_what_the_command_takes_and_its_config_keeps_the_settings_runtime(captured_step):
    prefcraft.fit(SMALL, users=["u1"], population="all", val_orders="both_orders",
                  config=prefcraft.SynthesizeMeConfig(num_persona_subsets=2, labeled_demos=2))
    options, settings = captured_step[0]
    assert (options.population, options.val_orders) == ("all", "both_orders")
    config = options.search_config(settings)
    assert (config.num_persona_subsets, config.labeled_demos) == (2, 2)  # the config's own choices
    assert (config.num_threads, config.seed, config.max_demos) == (3, 7, 3)  # the settings', as the command's
    assert config.num_demo_candidates == api.FitOptions().search_config(settings).num_demo_candidates


def test_a_fit_configs_explicit_runtime_and_demo_cap_win(captured_step):
    prefcraft.fit(SMALL, config=prefcraft.SynthesizeMeConfig(num_threads=1, seed=11, max_demos=6))
    options, settings = captured_step[0]
    config = options.search_config(settings)
    assert (config.num_threads, config.seed, config.max_demos) == (1, 11, 6)


def test_without_a_config_fit_searches_as_the_command_does(captured_step):
    prefcraft.fit(SMALL)
    options, settings = captured_step[0]
    assert options.search_config(settings) == api.FitOptions().search_config(settings)


def test_evaluate_takes_the_demographics_judge_and_the_population(captured_step):
    prefcraft.evaluate(SMALL, methods=["demographics"], demographics="survey.jsonl",
                       demographics_judge="persona_judge", population="val")
    options, _ = captured_step[0]
    assert (options.demographics_judge, options.population) == ("persona_judge", "val")
    with pytest.raises(ConfigError, match=r"prefcraft\.evaluate: demographics_judge"):
        prefcraft.evaluate(SMALL, demographics_judge="someone")

"""`prefcraft experiment rehearse`: each paper-scale file at its smallest scale, end to end against the instant server
(faults injected in one), and the data generators read back by the components' own loaders at the sizes asked."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from prefcraft.commands.main import main
from prefcraft.components.cupid.data import load_instances
from prefcraft.components.lampqa.data import load_questions
from prefcraft.components.prefdisco.data import load_scenarios
from prefcraft.components.synthesizeme.population import load_population
from prefcraft.components.synthesizeme.profiles import load_profiles
from prefcraft.errors import ConfigError
from prefcraft.experiments.files import load_experiment
from prefcraft.experiments.rehearsal.data import CUPID_PERSONAS, PRISM_USERS, SENSE_TOPICS, reuse_or_write, write_data
from prefcraft.experiments.rehearsal.report import HEADLINE, MARK
from prefcraft.experiments.rehearsal.run import rehearsal_settings, served_context

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"
BENCHMARKS = EXPERIMENTS.parent / "benchmarks"


def rehearse(capsys, path, *flags):
    status = main(["experiment", "rehearse", str(path), *flags])
    table = capsys.readouterr().out
    return status, table[table.index(HEADLINE):].splitlines()


def line_of(table, start):
    (line,) = [line for line in table if line.startswith(f"{MARK} {start}")]
    return line


def role_requests(table, role):
    return int(line_of(table, f"{role} ").split()[len(MARK.split()) + 1].replace(",", ""))


def failed_items(table):
    return int(line_of(table, "faults met").rsplit(" ", 1)[1].replace(",", ""))


@pytest.mark.parametrize(("name", "scale", "roles"), [
    ("synthesizeme-table3", 0.0027, ["task"]),
    ("cupid-main", 0.002, ["task", "judge"]),
    ("prefdisco-conditions", 0.0001, ["task", "judge"]),
])
def test_a_paper_scale_file_rehearses_end_to_end(tmp_path, capsys, name, scale, roles):
    status, table = rehearse(capsys, EXPERIMENTS / f"{name}.toml", "--scale", str(scale), "--work-dir",
                             str(tmp_path), "--threads", "4")
    assert status == 0
    assert table[0] == HEADLINE and all(line.startswith(MARK) for line in table[1:])
    assert all(role_requests(table, role) > 0 for role in roles)
    assert failed_items(table) == 0  # no fault injected, none failed
    assert table[-1].endswith("every step ran to the end")


def test_injected_faults_are_counted_as_failed_items_and_the_run_finishes(tmp_path, capsys):
    status, table = rehearse(capsys, EXPERIMENTS / "lampqa-methods.toml", "--scale", "0.0012", "--work-dir",
                             str(tmp_path), "--context-tokens", "6000", "--error-rate", "0.1", "--threads", "4")
    assert status == 0
    met = line_of(table, "faults met")
    assert "context_length" in met and "server_error" in met
    assert failed_items(table) > 0
    assert role_requests(table, "task") > 0 and role_requests(table, "judge") > 0
    assert table[-1].endswith("every step ran to the end")


def test_sensejudge_rehearses_with_fewer_descriptions(tmp_path, capsys):
    text = (EXPERIMENTS / "sensejudge-subsets.toml").read_text()
    smaller = tmp_path / "sensejudge.toml"
    smaller.write_text(text.replace("max_pair_descriptions = 10", "max_pair_descriptions = 1")
                       .replace("dev_pairs_per_topic = 10", "dev_pairs_per_topic = 2"))
    status, table = rehearse(capsys, smaller, "--scale", "0.01", "--work-dir", str(tmp_path / "work"))
    assert status == 0 and role_requests(table, "task") > 0
    assert "unset: the model's default" in line_of(table, "task ")


def test_an_unhandled_error_exits_2_after_the_table(tmp_path, capsys, monkeypatch):
    import prefcraft.experiments.running as experiment_command

    def broken(*args, **kwargs):
        raise RuntimeError("a step broke")

    monkeypatch.setattr(experiment_command, "run_experiment", broken)
    status, table = rehearse(capsys, EXPERIMENTS / "cupid-main.toml", "--scale", "0.002", "--work-dir", str(tmp_path))
    assert status == 2
    assert "STOPPED by an unhandled error: RuntimeError: a step broke" in table[-1]


def test_prism_data_is_read_back_per_population_with_its_survey_and_released_prompt(tmp_path):
    data = write_data(load_experiment(EXPERIMENTS / "synthesizeme-table3.toml"), tmp_path, 0.01)
    test_users = {pair.user_id for pair in load_population(data.options["fit"]["data"], "test")}
    assert len(test_users) == round(PRISM_USERS["test"] * 0.01)
    assert test_users <= load_profiles(data.options["evaluate"]["demographics"]).keys()
    released = json.loads(Path(data.options["import-persona-prompt"]["released"]).read_text())
    assert 80_000 <= sum(len(json.dumps(demo)) for demo in released["synthesize.predict"]["demos"]) <= 90_000


def test_cupid_lampqa_prefdisco_and_sensejudge_data_are_read_back_at_the_sizes_asked(tmp_path):
    def written(name, scale):
        return write_data(load_experiment(EXPERIMENTS / f"{name}.toml"), tmp_path / name, scale)

    cupid = written("cupid-main", 0.02)
    assert len(load_instances(cupid.options["evaluate"]["data"]).instances) == 3 * round(CUPID_PERSONAS * 0.02)
    lampqa = written("lampqa-methods", 0.005)
    questions = load_questions(lampqa.options["evaluate"]["data"], "test").questions
    assert len(questions) == sum(round(size * 0.005) for size in (767, 989, 1_074))
    words = [len(post.text.split()) for question in questions for post in question.profile]
    assert 100 < sum(words) / len(words) < 250  # Table 1: descriptions of 145-169 words on average
    prefdisco = written("prefdisco-conditions", 0.003)
    scenarios = load_scenarios(prefdisco.options["evaluate"]["data"])
    assert len(scenarios) == 10 * 3 and len({scenario.task for scenario in scenarios}) == 10
    sensejudge = written("sensejudge-subsets", 0.1)
    labels = Path(sensejudge.options["select"]["human_labels"])
    assert sorted(path.name for path in labels.iterdir()) == [f"sense-label{n}.json" for n in (1, 2, 3)]
    assert len(json.loads((labels / "sense-label1.json").read_text())) == len(SENSE_TOPICS) * round(125 * 0.1)


def test_the_context_comes_from_the_files_vllm_serve_line():
    text = "# serve it:\n#   vllm serve org/model --port 8000 \\\n#       --max-model-len 16384\n"
    assert served_context(text, "hosted_vllm/org/model").tokens == 16_384
    assert served_context("#   vllm serve org/model --port 8000\n", "hosted_vllm/org/model").source.startswith("unset")
    assert served_context(text, "openai/gpt-4.1").tokens is None


def test_resumed_data_is_the_first_runs_and_another_scale_is_refused(tmp_path):
    experiment = load_experiment(EXPERIMENTS / "cupid-main.toml")
    first = reuse_or_write(experiment, tmp_path, 0.002)
    (tmp_path / "cupid.jsonl").write_text("{}\n")  # what a resumed run must read as it is, not write again
    assert reuse_or_write(experiment, tmp_path, 0.002) == first
    assert (tmp_path / "cupid.jsonl").read_text() == "{}\n"
    with pytest.raises(ConfigError, match=r"not 0\.003"):
        reuse_or_write(experiment, tmp_path, 0.003)


def test_several_endpoints_become_every_roles_api_bases(tmp_path):
    experiment = load_experiment(EXPERIMENTS / "cupid-main.toml")
    urls = ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"]
    settings = rehearsal_settings(experiment, urls, tmp_path, None, resume=True)
    assert settings.task.api_bases == urls and settings.judge.api_bases == urls
    assert settings.task.api_base is None and settings.resume
    assert rehearsal_settings(experiment, urls[:1], tmp_path, None).task.api_base == urls[0]


@pytest.mark.parametrize("flags", [["--resume"], ["--server-url", "http://127.0.0.1:1/v1", "--error-rate", "0.1"]])
def test_resume_needs_the_work_folder_and_a_running_server_keeps_its_own_faults(capsys, flags):
    assert main(["experiment", "rehearse", str(EXPERIMENTS / "cupid-main.toml"), *flags]) != 0


def test_a_rehearsal_killed_midway_resumes_without_sending_an_answered_call_again(tmp_path):
    """benchmarks/paper_scale_rehearsal.py --quick's kill-and-resume: the server killed and restarted at a quarter of
    the requests, the rehearsal killed at half, then --resume."""
    output = tmp_path / "result.json"
    subprocess.run([sys.executable, str(BENCHMARKS / "paper_scale_rehearsal.py"), "--quick", "--skip", "files",
                    "scale-out", "--output", str(output)], check=True, capture_output=True, timeout=120)
    resumed = json.loads(output.read_text())["kill_and_resume"]
    assert resumed["finished"] and resumed["failed_items_resumed"] == 0
    assert resumed["requests_before_kill"] >= resumed["estimated_requests"] // 2 > 0
    assert resumed["bodies_answered_before_kill_sent_again"] <= resumed["repeats_allowed"]  # the cache answered them
    assert resumed["users_fitted"] == resumed["test_users"] > 0

"""`prefcraft sensejudge` without a model server: the command line, and every step's control flow on a scripted LM."""

import json
from pathlib import Path

import dspy
import mlflow
import numpy as np
import pytest
from dspy.utils import DummyLM
from sensebench_files import write_dialogues

import prefcraft
from prefcraft import runner
from prefcraft.commands.main import main, make_parser
from prefcraft.components.sensejudge import evaluation as sensejudge_evaluation
from prefcraft.components.sensejudge import selection as sensejudge_selection
from prefcraft.components.sensejudge import simulation as sensejudge_simulation
from prefcraft.components.sensejudge.commands import COMPONENT
from prefcraft.components.sensejudge.evaluation import read_held_out_pairs
from prefcraft.components.sensejudge.options import (
    DEMO_TOPICS,
    DemoOptions,
    EvaluateOptions,
    SelectOptions,
    SimulateOptions,
)
from prefcraft.components.sensejudge.ranking import draw_descriptions
from prefcraft.components.sensejudge.report import (
    SIMULATED_NOTE,
    format_demo,
    format_evaluation,
    format_selection,
    format_simulation,
)
from prefcraft.components.sensejudge.selection import description_names, read_dev_pairs
from prefcraft.components.sensejudge.simulate import read_simulated
from prefcraft.components.sensejudge.simulation import SimulationConfig, sample_dialogues
from prefcraft.components.sensejudge.topics import ALL_TOPICS
from prefcraft.engine.usage import LMUsage
from prefcraft.errors import ConfigError, DataError
from prefcraft.experiments.files import load_experiment
from prefcraft.flags import parse_step
from prefcraft.loaders.personal_reward_bench import judge_set, load_pairs, pair_id
from prefcraft.metrics.pairwise import Judgment
from prefcraft.optimizers.artifacts import load_compiled
from prefcraft.programs.sensejudge import SelectedJudge
from prefcraft.settings import Settings


@pytest.fixture
def tracker(fake_runner):
    return fake_runner


@pytest.fixture
def scripted(monkeypatch, tracker):
    """No server; every call answers from one long script (JSON, as the schema adapter asks), so every response
    differs."""
    lm = DummyLM([{"response": f"Answer {i}.", "reasoning": "r", "preference": "First" if i % 3 else "Second",
                   "analysis": "a", "decision": "Response A" if i % 3 else "Response B"}
                  for i in range(2000)], adapter=dspy.JSONAdapter())
    offline(monkeypatch, lm)
    return lm


def offline(monkeypatch, lm):
    for module in (sensejudge_selection, sensejudge_evaluation, sensejudge_simulation):
        monkeypatch.setattr(module, "lm_context", lambda *args: dspy.context(lm=lm, adapter=dspy.JSONAdapter()))


def run_step(step, options):
    """`prefcraft sensejudge <step>` through the runner, on one thread (no server, no MLflow: `tracker`)."""
    return runner.run_step("sensejudge", step, options, Settings(threads=1), lambda text: None)


def simulate_two_topics(tmp_path):
    """One dev and one test dialogue in each of two topics, three response models: three dev and three test pairs a
    topic."""
    source = write_dialogues(tmp_path, count=3, topics=("QA", "Math"))
    options = SimulateOptions(sensebench=source, output=tmp_path / "pairs.jsonl", dev_dialogues=1, test_dialogues=1,
                              response_models=["plain", "concise", "detailed"])
    return run_step("simulate", options)


def select_in(tmp_path, pairs, **options):
    """`select` on `pairs`, writing the judge in `tmp_path`; two dev pairs of each topic get a description."""
    chosen = SelectOptions(data=pairs, judge_file=tmp_path / "sensejudge.json",
                           **{"max_pair_descriptions": 2, **options})
    return run_step("select", chosen)


def evaluate_in(tmp_path, pairs, **options):
    """`evaluate` on `pairs` of the judge `select_in` wrote, the judgments written under `tmp_path / "out"`."""
    chosen = EvaluateOptions(data=pairs, judge_file=tmp_path / "sensejudge.json", output_dir=tmp_path / "out",
                             **options)
    return run_step("evaluate", chosen)


def test_simulate_select_and_evaluate_run_per_topic_end_to_end_on_a_scripted_lm(scripted, tracker, tmp_path):
    summary = simulate_two_topics(tmp_path)
    assert (summary.dev_pairs, summary.test_pairs) == (6, 6) and len(summary.dialogues) == 4
    assert summary.topics == {"Math": [3, 3], "QA": [3, 3]}  # every topic has dev and test pairs
    rows = [json.loads(line) for line in summary.path.read_text().splitlines()]
    assert {row["labels"] for row in rows} == {"simulated"} and {row["topic"] for row in rows} == {"QA", "Math"}
    assert len(load_pairs(summary.path)) == 12  # the PersonalRewardBench loader reads them
    text = format_simulation(summary)
    assert SIMULATED_NOTE in text and "Math 3 + 3, QA 3 + 3" in text

    selection = select_in(tmp_path, summary.path)
    assert selection.scope == "topic" and list(selection.topics) == ["Math", "QA"]
    for topic in ("Math", "QA"):  # none, two of the topic's dev pairs, the aggregate; its 3 pairs in both orders
        assert len(selection.topics[topic].descriptions) == 4 and selection.records[topic].examples == 6
    assert selection.usage["extraction"].calls == 6 and selection.usage["selection"].calls == 2 * 4 * 6
    assert selection.dev_accuracy == (selection.records["Math"].accuracy + selection.records["QA"].accuracy) / 2
    assert "Math: selected" in format_selection(selection)

    # the registry's builder and the saved state give each topic's subset back
    loaded = prefcraft.load(tmp_path / "sensejudge.json")
    assert set(loaded.program.topics) == {"Math", "QA"}
    assert [len(loaded.program.for_topic(topic).judges) for topic in ("Math", "QA")] == [
        len(loaded.metadata["topics"][topic]["descriptions"]) for topic in ("Math", "QA")]

    outcome = evaluate_in(tmp_path, summary.path)
    assert [row.name for row in outcome.rows] == ["no description", "dev pair 1", "dev pair 2", "aggregate"]
    assert outcome.selected.report.accuracy.n == 12 and set(outcome.selected.topics) == {"Math", "QA"}
    assert outcome.selected.overall == sum(outcome.selected.topics.values()) / 2
    assert set(outcome.reference_scores) == set(outcome.reference_strategies) == {"Math", "QA"}
    records = {topic: selection.records[topic] for topic in ("Math", "QA")}
    assert outcome.reference_subsets == sum(len(record.reference_subsets) for record in records.values())
    assert outcome.usage["every_description"].calls == 2 * 4 * 6
    assert set(outcome.ranking.judge_wins) <= {"plain", "concise", "detailed"}
    assert outcome.ranking.judge == ("5 random descriptions per topic, majority vote; all of them where a topic has "
                                     "fewer (Math 3, QA 3)")  # the empty description is no preference: not drawn
    assert outcome.ranking.drawn == {topic: ["dev pair 1", "dev pair 2", "aggregate"] for topic in ("Math", "QA")}
    assert outcome.labels == "simulated"
    assert len((tmp_path / "out" / "sensejudge-judgments.jsonl").read_text().splitlines()) == 12
    text = format_evaluation(outcome)
    assert SIMULATED_NOTE in text and "Kendall tau" in text and "SenseJudge score" in text and "headline" in text
    assert "Accuracy per topic" in text and "selected per topic" in text
    assert "model ranking (judge: 5 random descriptions per topic" in text
    assert "  QA descriptions drawn: dev pair 1, dev pair 2, aggregate" in text

    # One run per step, opened by the runner with the step's params; its metrics and every result file, written
    # once, logged to it.
    assert [(run.name, run.nested) for run in tracker.runs] == [
        ("sensejudge-simulate", False), ("sensejudge-select", False), ("sensejudge-evaluate", False)]
    simulated, selected, evaluated = tracker.runs
    assert simulated.params["labels"] == "simulated" and simulated.params["dev_dialogues"] == 1
    assert simulated.params["seed"] == 0 and simulated.metrics["dev_pairs"] == 6
    assert [path.name for path in simulated.files] == ["pairs.jsonl", "dialogues.json"]
    assert selected.params["scope"] == "topic" and selected.params["max_pair_descriptions"] == 2
    assert selected.metrics["dev_accuracy"] == selection.dev_accuracy
    assert selected.files == [tmp_path / "sensejudge.json"]
    assert evaluated.params["test_pairs"] == 6 and evaluated.metrics["selected_overall_accuracy"] == (
        outcome.selected.overall)
    assert evaluated.metrics["sensejudge_score"] == outcome.headline
    assert selected.metrics["failed_descriptions"] == 0
    assert [path.name for path in evaluated.files] == ["sensejudge-evaluation.json", "sensejudge-judgments.jsonl"]

    with summary.path.open("a") as pairs:
        pairs.write(summary.path.read_text().splitlines()[0].replace('"train"', '"test"') + "\n")
    with pytest.raises(ConfigError, match="could be among the test pairs"):  # read before any model starts
        read_held_out_pairs(EvaluateOptions(data=summary.path, judge_file=tmp_path / "sensejudge.json"))


def test_scope_all_selects_once_over_every_dev_pair_and_still_reports_each_topic(scripted, tmp_path):
    summary = simulate_two_topics(tmp_path)
    selection = select_in(tmp_path, summary.path, scope="all")
    assert list(selection.topics) == [ALL_TOPICS] and selection.records[ALL_TOPICS].examples == 12
    assert selection.usage["extraction"].calls == 3
    judge = SelectedJudge()
    metadata = load_compiled(judge, tmp_path / "sensejudge.json", program_name="sensejudge")
    assert judge.topics == {} and metadata["scope"] == "all"

    outcome = evaluate_in(tmp_path, summary.path)
    assert outcome.scope == "all" and set(outcome.selected.topics) == {"Math", "QA"}
    assert list(outcome.reference_scores) == [ALL_TOPICS] and outcome.selected.report.accuracy.n == 12
    assert "once over all dev pairs" in format_evaluation(outcome)


def test_per_topic_selection_needs_the_pairs_topics(scripted, tmp_path):
    summary = simulate_two_topics(tmp_path)
    rows = [json.loads(line) for line in summary.path.read_text().splitlines()]
    untopical = tmp_path / "untopical.jsonl"
    untopical.write_text("".join(json.dumps({k: v for k, v in row.items() if k != "topic"}) + "\n" for row in rows))
    with pytest.raises(DataError, match="topic") as error:  # read before any model starts
        read_dev_pairs(SelectOptions(data=untopical, judge_file=tmp_path / "sensejudge.json"))
    assert "--scope all" in error.value.hint


def test_a_dialogue_whose_responses_are_the_same_is_replaced_by_the_next_one(monkeypatch, tracker, tmp_path):
    def answer(response, preference="First"):
        return {"response": response, "reasoning": "r", "preference": preference}

    # Round 1 (two dialogues): plain answers both, then concise; the first dialogue's two responses are the same,
    # so only the second is labelled. Round 2 draws one more dialogue for the test split.
    offline(monkeypatch, DummyLM([answer("Same."), answer("B plain"), answer("Same."), answer("B concise"),
                                  answer("-", "Second"), answer("C plain"), answer("C concise"), answer("-")],
                                 adapter=dspy.JSONAdapter()))
    source = write_dialogues(tmp_path)
    options = SimulateOptions(sensebench=source, output=tmp_path / "pairs.jsonl", dev_dialogues=1, test_dialogues=1,
                              response_models=["plain", "concise"])
    pool = sample_dialogues(read_simulated(options), options, Settings().seed)["QA"]  # the order simulate draws
    summary = run_step("simulate", options)
    assert (summary.dev_pairs, summary.test_pairs) == (1, 1)
    assert summary.identical_pairs == 1 and summary.replaced_dialogues == 1
    assert summary.dialogues == [pool[1].index, pool[2].index]
    rows = [json.loads(line) for line in summary.path.read_text().splitlines()]
    assert [row["split"] for row in rows] == ["train", "test"]
    assert [row["conversation_id"] for row in rows] == [f"sensebench-{pool[i].index}" for i in (1, 2)]


def test_two_response_models_that_answer_alike_make_one_pair_not_two_with_the_same_id(monkeypatch, tracker,
                                                                                       tmp_path):
    def answer(response, preference="First"):
        return {"response": response, "reasoning": "r", "preference": preference}

    # One dialogue per split; plain and concise answer alike, so (plain, detailed) and (concise, detailed) are one pair.
    offline(monkeypatch, DummyLM([answer("A same"), answer("B plain"), answer("A same"), answer("B concise"),
                                  answer("A long"), answer("B long"), *[answer("-")] * 6], adapter=dspy.JSONAdapter()))
    source = write_dialogues(tmp_path)
    options = SimulateOptions(sensebench=source, output=tmp_path / "pairs.jsonl", dev_dialogues=1, test_dialogues=1,
                              response_models=["plain", "concise", "detailed"])
    summary = run_step("simulate", options)
    assert (summary.dev_pairs, summary.test_pairs, summary.identical_pairs) == (1, 3, 2)
    assert len({pair_id(pair) for pair in load_pairs(summary.path)}) == 4  # the loader refuses repeated pairs


def hand_made_pairs(tmp_path):
    """One topic, six dev pairs and one test pair; the annotator always prefers model a to model b."""
    def row(number, split):
        return {"user_id": "annotator", "split": split, "conversation_id": f"c{number}",
                "context": [{"role": "user", "content": f"Question {number}?"}],
                "chosen": {"role": "assistant", "content": f"a answers {number}."},
                "rejected": {"role": "assistant", "content": f"b answers {number}."},
                "chosen_model": "a", "rejected_model": "b", "topic": "QA", "labels": "by hand"}

    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(row(number, "train" if number < 6 else "test")) + "\n" for number in range(7)))
    return path


def test_the_papers_ranking_judge_and_the_selected_judge_can_rank_two_models_differently(
        scripted, monkeypatch, tmp_path):
    pairs = hand_made_pairs(tmp_path)
    select_in(tmp_path, pairs, max_pair_descriptions=5)  # candidates: none, dev pairs 1 to 5, the aggregate
    # The test pair in both orders (a first, then b first). The empty description and two written ones vote for a,
    # four written ones for b: any 5 of the 6 written descriptions hold 3 or more of b's votes, so b wins both.
    for_a, for_b = [1, -1], [-1, 1]
    votes = np.array([for_a, for_b, for_b, for_b, for_b, for_a, for_a], dtype=np.int8)
    monkeypatch.setattr(sensejudge_evaluation, "collect_votes", lambda judges, examples, **_: votes)

    def selected_prefers_a(judge, pairs, **_):
        return [Judgment(example.user_id, example.pair_id, example.order, example.preference, True)
                for example in judge_set(pairs)], LMUsage()

    monkeypatch.setattr(sensejudge_evaluation, "judge_pairs", selected_prefers_a)

    paper = evaluate_in(tmp_path, pairs).ranking
    assert paper.judge == "5 random descriptions per topic, majority vote"
    assert len(paper.drawn["QA"]) == 5 and "no description" not in paper.drawn["QA"]
    assert paper.judge_wins == {"a": 0.0, "b": 1.0} and paper.by_wins.kendall_tau == -1.0
    assert paper.judge_bradley_terry["b"] > paper.judge_bradley_terry["a"]

    selected = evaluate_in(tmp_path, pairs, ranking_judge="selected").ranking
    assert selected.judge == "selected judge" and selected.drawn == {}
    assert selected.judge_wins == {"a": 1.0, "b": 0.0} and selected.by_wins.kendall_tau == 1.0
    assert paper.reference == selected.reference == {"a": 1.0, "b": 0.0}


def test_the_ranking_descriptions_are_drawn_reproducibly_and_all_are_taken_when_fewer():
    descriptions = ["", *[f"description {number}" for number in range(1, 9)]]
    drawn = draw_descriptions(descriptions, 5, seed=7, topic="QA")
    assert len(drawn) == 5 and 0 not in drawn and drawn == sorted(drawn)
    assert draw_descriptions(descriptions, 5, seed=7, topic="QA") == drawn
    assert len({tuple(draw_descriptions(descriptions, 5, seed=seed, topic="QA")) for seed in range(10)}) > 1
    assert draw_descriptions(["", "short", "long"], 5, seed=7, topic="QA") == [1, 2]


def test_the_ranking_judge_flags_reach_the_options():
    default = parse_step(COMPONENT, "evaluate", [])
    assert (default.ranking_judge, default.ranking_descriptions) == ("random_descriptions", 5)
    options = parse_step(COMPONENT, "demo", ["--sensebench", "d.json", "--ranking-judge", "selected",
                                             "--ranking-descriptions", "3"])
    assert (options.ranking_judge, options.ranking_descriptions) == ("selected", 3)


def test_description_names_follow_the_extractor_order():
    assert description_names(4) == ["no description", "dev pair 1", "dev pair 2", "aggregate"]


def test_the_demo_flags_make_a_small_job():
    options = parse_step(COMPONENT, "demo", ["--sensebench", "d.json", "--response-models", "concise", "plain"])
    assert options.response_models == ["concise", "plain"] and options.topics == ["QA", "Math"]
    assert (options.dev_dialogues, options.test_dialogues) == (1, 1)
    assert options.max_pair_descriptions == 4 and options.scope == "topic"
    assert options.selection(num_threads=2).num_threads == 2
    assert (options.data, options.judge_file, options.output_dir) == (
        Path("runs/sensejudge/pairs.jsonl"), Path("runs/sensejudge/sensejudge.json"), Path("runs/sensejudge"))


def test_the_former_names_of_data_judge_file_and_response_models_are_taken_with_a_warning(caplog, tmp_path):
    args = make_parser().parse_args(["sensejudge", "demo", "--sensebench", "d.json", "--pairs", "p.jsonl", "--judge",
                                     "j.json", "--variants", "concise", "plain"])
    assert (str(args.data), str(args.judge_file), args.response_models) == ("p.jsonl", "j.json", ["concise", "plain"])
    for old, new in (("--pairs", "--data"), ("--judge", "--judge-file"), ("--variants", "--response-models")):
        assert f"{old} is now {new}" in caplog.text
    args = make_parser().parse_args(["sensejudge", "evaluate", "--pairs", "p.jsonl", "--judge", "j.json"])
    assert (str(args.data), str(args.judge_file)) == ("p.jsonl", "j.json")
    assert make_parser().parse_args(["sensejudge", "simulate", "--sensebench", "d.json", "--variants", "plain",
                                     "concise"]).response_models == ["plain", "concise"]
    # simulate's --pairs stays its --output
    assert str(make_parser().parse_args(["sensejudge", "simulate", "--sensebench", "d.json", "--pairs",
                                         "p.jsonl"]).output) == "p.jsonl"
    caplog.clear()
    args = make_parser().parse_args(["sensejudge", "select", "--data", "p.jsonl", "--judge-file", "j.json"])
    assert (str(args.data), str(args.judge_file)) == ("p.jsonl", "j.json") and "is now" not in caplog.text
    experiment = tmp_path / "sensejudge.toml"
    experiment.write_text('name = "t"\ncomponent = "sensejudge"\n[steps.select]\npairs = "p.jsonl"\n'
                          'judge = "j.json"\n[steps.simulate]\nsensebench = "d.json"\n'
                          'variants = ["plain", "concise"]\n')
    steps = load_experiment(experiment).steps
    assert steps["select"] == {"data": Path("p.jsonl"), "judge_file": Path("j.json")}
    assert steps["simulate"] == {"sensebench": Path("d.json"), "response_models": ["plain", "concise"]}
    assert "option pairs is now data" in caplog.text and "option judge is now judge_file" in caplog.text
    assert "option variants is now response_models" in caplog.text
    options = DemoOptions(sensebench="d.json", pairs="p.jsonl", judge="j.json", variants=["plain", "detailed"])
    assert (options.data, options.judge_file, options.response_models) == (
        Path("p.jsonl"), Path("j.json"), ["plain", "detailed"])


def test_the_simulation_defaults_are_the_simulate_steps():
    options = parse_step(COMPONENT, "simulate", ["--sensebench", "d.json"])
    assert SimulationConfig().model_dump() == {name: getattr(options, name) for name in SimulationConfig.model_fields}
    assert options.output == Path("runs/sensejudge/pairs.jsonl") and options.topics is None


def test_the_demo_runs_its_three_steps_in_one_session_and_reports_each_in_order(scripted, tracker, tmp_path):
    source = write_dialogues(tmp_path, count=3, topics=("QA", "Math"))
    options = DemoOptions(sensebench=source, data=tmp_path / "pairs.jsonl", judge_file=tmp_path / "sensejudge.json",
                          output_dir=tmp_path / "out", max_pair_descriptions=1)
    emitted = []
    outcome = runner.run_step("sensejudge", "demo", options, Settings(threads=1), emitted.append)
    # Each step in the run it declares, with the params it logs when run alone; the demo opens none of its own.
    assert [(run.name, run.nested) for run in tracker.runs] == [
        ("sensejudge-simulate", False), ("sensejudge-select", False), ("sensejudge-evaluate", False)]
    simulated, selected, evaluated = tracker.runs
    assert simulated.params["topics"] == DEMO_TOPICS and simulated.params["dialogues"] == str(source)
    assert [path.name for path in simulated.files] == ["pairs.jsonl", "dialogues.json"]
    assert selected.params["data"] == str(options.data) and selected.params["max_pair_descriptions"] == 1
    assert selected.params["dev_pairs"] == outcome.simulation.dev_pairs and selected.files == [options.judge_file]
    assert evaluated.params["test_pairs"] == outcome.simulation.test_pairs
    assert evaluated.params["judge_file"] == str(options.judge_file)
    assert evaluated.metrics["sensejudge_score"] == outcome.evaluation.headline
    assert emitted == [format_demo(outcome)]
    assert outcome.simulation.path == options.data and outcome.selection.path == options.judge_file
    assert list(outcome.evaluation.selected.topics) == sorted(DEMO_TOPICS)
    report = format_demo(outcome)
    assert report == "\n".join([format_simulation(outcome.simulation), format_selection(outcome.selection),
                                format_evaluation(outcome.evaluation)])
    comparison = COMPONENT.demo.compare(outcome)
    assert comparison.baseline == "baseline (no description)" and comparison.personalized.startswith("SenseJudge score")
    assert comparison.personalized_score == outcome.evaluation.headline


def test_a_bad_dialogue_file_or_response_model_fails_before_any_server_starts(tmp_path, capsys):
    assert main(["sensejudge", "simulate", "--sensebench", str(tmp_path / "absent.json")]) == 2
    assert "file not found" in capsys.readouterr().err
    source = write_dialogues(tmp_path)
    assert main(["sensejudge", "simulate", "--sensebench", str(source), "--response-models", "plain", "rude"]) == 2
    assert "response models must be two or more" in capsys.readouterr().err
    assert main(["sensejudge", "simulate", "--sensebench", str(source), "--dev-dialogues", "9"]) == 2
    assert "cannot draw 9 dev" in capsys.readouterr().err
    assert main(["sensejudge", "simulate", "--sensebench", str(source), "--topics", "QA", "Poetry"]) == 2
    assert "no dialogues of the topics Poetry" in capsys.readouterr().err


def test_pairs_or_a_judge_that_do_not_fit_fail_before_any_server_starts(tmp_path, capsys):
    assert main(["sensejudge", "select", "--data", str(tmp_path / "absent.jsonl")]) == 2
    assert "absent.jsonl" in capsys.readouterr().err
    pairs = hand_made_pairs(tmp_path)
    assert main(["sensejudge", "evaluate", "--data", str(pairs), "--judge-file", str(tmp_path / "absent.json")]) == 2
    assert "absent.json" in capsys.readouterr().err


SENSEBENCH = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "sensebench"


@pytest.mark.server
@pytest.mark.skipif(not (SENSEBENCH / "new_sense_bmk.json").is_file(),
                    reason="SenseBench dialogues not present at ../shared/data/sensebench/")
def test_sensejudge_demo_on_real_sensebench_dialogues(embedded_server, tmp_path, capsys):
    """Tiny but real: 4 real requests (one dev and one test in each of the demo's two topics), two response models,
    a dev and a test pair per topic, 3 candidate descriptions per topic. The small-model profile bounds the annotator's
    reasoning in characters (400), not tokens: 256 tokens cut short a reasoning that ran into a repeated full-width
    semicolon (two tokens a character to this model's tokenizer), so a Math dialogue lost its label, and after three
    such losses its topic had no replacement dialogue left; 1024 tokens hold 400 characters of it."""
    flags = ["--no-serve", "--task-api-base", embedded_server.base_url, "--task-max-tokens", "1024",
             "--task-timeout-s", "300", "--threads", "4", "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db",
             "--cache-dir", str(tmp_path / "cache"), "--sensebench", str(SENSEBENCH),
             "--data", str(tmp_path / "pairs.jsonl"), "--judge-file", str(tmp_path / "sensejudge.json"),
             "--output-dir", str(tmp_path / "out"), "--dev-dialogues", "1", "--test-dialogues", "1",
             "--response-models", "concise", "detailed", "--max-pair-descriptions", "1", "--max-context-chars", "200",
             "--max-response-chars", "160"]
    assert main(["sensejudge", "demo", *flags]) == 0
    out = capsys.readouterr().out
    assert SIMULATED_NOTE in out and "Kendall tau" in out
    rows = [json.loads(line) for line in (tmp_path / "pairs.jsonl").read_text().splitlines()]
    assert {row["labels"] for row in rows} == {"simulated"}
    assert {(row["topic"], row["split"]) for row in rows} == {(topic, split) for topic in DEMO_TOPICS
                                                               for split in ("train", "test")}

    judge = SelectedJudge()
    metadata = load_compiled(judge, tmp_path / "sensejudge.json", program_name="sensejudge")
    assert set(judge.topics) == set(metadata["topics"]) == set(DEMO_TOPICS)
    for topic, selection in metadata["topics"].items():
        assert len(judge.for_topic(topic).judges) == len(selection["descriptions"]) >= 1
        assert len(selection["candidate_descriptions"]) == 3

    assert main(["sensejudge", "demo", *flags]) == 0  # a re-run: every answer from DSPy's cache
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    runs = [run for run in mlflow.search_runs(experiment_names=["prefcraft"], output_format="list",
                                              order_by=["start_time ASC"])
            if "mlflow.parentRunId" not in run.data.tags]  # DSPy autologging may add child runs
    assert [run.info.run_name for run in runs] == ["sensejudge-simulate", "sensejudge-select",
                                                   "sensejudge-evaluate"] * 2
    assert all(run.info.status == "FINISHED" for run in runs)
    first, rerun = runs[:3], runs[3:]
    assert first[2].data.metrics["selected_judge_lm_calls"] == 0  # the same prompts as the votes
    assert first[1].data.metrics["selection_lm_calls"] > 0
    def lm_calls(runs):
        return {name: value for run in runs for name, value in run.data.metrics.items() if name.endswith("lm_calls")}

    # A reply cut short at max_tokens is never cached, so the re-run asks those again and nothing else.
    first_calls, rerun_calls = lm_calls(first), lm_calls(rerun)
    assert rerun_calls.keys() == first_calls.keys()
    assert all(rerun_calls[name] <= first_calls[name] for name in first_calls), (first_calls, rerun_calls)
    assert sum(rerun_calls.values()) < sum(first_calls.values()), (first_calls, rerun_calls)

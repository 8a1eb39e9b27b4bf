"""SenseBench's human labels, on files of the published shape written to tmp_path: reading, the reference's
de-duplication, per-topic dev/test split and long-input cut, and `select` / `evaluate` on them with a scripted LM."""

import json
import random

import dspy
import pytest
from dspy.utils import DummyLM

from prefcraft import runner
from prefcraft.components.sensejudge import evaluation as sensejudge_evaluation
from prefcraft.components.sensejudge import human_labels
from prefcraft.components.sensejudge import selection as sensejudge_selection
from prefcraft.components.sensejudge.commands import COMPONENT
from prefcraft.components.sensejudge.evaluation import read_held_out_pairs
from prefcraft.components.sensejudge.human_labels import LabelSplit, annotator_file, load_human_labels
from prefcraft.components.sensejudge.options import EvaluateOptions, SelectOptions
from prefcraft.components.sensejudge.pairs import read_annotator_pairs
from prefcraft.components.sensejudge.report import NO_MODELS, SIMULATED_NOTE, format_evaluation
from prefcraft.errors import ConfigError, DataError
from prefcraft.flags import parse_step
from prefcraft.loaders.personal_reward_bench import pair_id
from prefcraft.programs.sensejudge import PreferenceExtractor
from prefcraft.settings import Settings
from prefcraft.signatures.sensejudge import AGGREGATE_ONE_SENTENCE, EXTRACT_ONE_SENTENCE, ExtractPreference


def turn(speaker, text):
    return {"from": speaker, "value": [{"type": "text", "value": text}]}


def record(topic, number, *, history=(), chosen=None, rejected=None):
    """One published record: a dialogue ending with a request, the chosen and the rejected response."""
    return {"prompt": [*history, turn("Human", f"{topic} request {number}?")],
            "chosen": turn("Assistant", chosen or f"good {topic} {number}"),
            "rejected": turn("Assistant", rejected or f"bad {topic} {number}"), "dataset": f"sense_bmk:{topic}"}


def write_labels(folder, records_of, annotators=(1, 2, 3)):
    folder.mkdir(exist_ok=True)
    for annotator in annotators:
        (folder / f"sense-label{annotator}.json").write_text(json.dumps(records_of(annotator), ensure_ascii=False))
    return folder


def two_topics(count=12):
    return [record(topic, number) for topic in ("Math", "QA") for number in range(count)]


def test_each_topics_dev_pairs_are_drawn_as_the_reference_draws_them_and_the_rest_are_test_pairs(tmp_path):
    folder = write_labels(tmp_path / "human_label", lambda annotator: two_topics())
    labels = load_human_labels(folder, "2")
    assert labels.path == folder / "sense-label2.json" and labels.annotator == "sense-label2"
    for topic in ("Math", "QA"):
        random.seed(42)  # the reference reseeds the module's generator for every topic, then samples positions
        drawn = random.sample(range(12), 10)
        dev = [label.judged for label in labels.dev if label.topic == topic]
        test = [label.judged for label in labels.test if label.topic == topic]
        assert [pair.context[-1].content for pair in dev] == [f"{topic} request {n}?" for n in drawn]  # drawn order
        assert [pair.context[-1].content for pair in test] == [f"{topic} request {n}?" for n in range(12)
                                                                if n not in drawn]  # file order
    assert {pair.split for pair in (label.judged for label in labels.dev)} == {"train"}
    assert {label.judged.user_id for label in labels.test} == {"sense-label2"}
    assert len({pair_id(label.judged) for label in (*labels.dev, *labels.test)}) == 24

    some = load_human_labels(folder, "2", LabelSplit(topics=("QA",), max_test_pairs_per_topic=1))
    assert [label.judged for label in some.dev] == [label.judged for label in labels.dev if label.topic == "QA"]
    assert [label.judged for label in some.test] == [label.judged for label in labels.test if label.topic == "QA"][:1]
    with pytest.raises(ConfigError, match="no pairs of the topics Poetry"):
        load_human_labels(folder, "2", LabelSplit(topics=("QA", "Poetry")))


def test_a_repeated_pair_in_either_order_is_dropped_and_a_small_topic_is_left_out(tmp_path, caplog):
    records = [*two_topics(), record("Math", 3, chosen="bad Math 3", rejected="good Math 3"),  # the same two, swapped
               record("Math", 3, chosen="other Math 3"), *[record("Code", n) for n in range(4)]]
    path = tmp_path / "sense-label1.json"
    path.write_text(json.dumps(records))
    labels = load_human_labels(path)
    assert labels.duplicates == 1 and labels.small_topics == {"Code": 4}
    assert "Code (4)" in caplog.text
    assert (len(labels.dev), len(labels.test)) == (20, 5)  # Math keeps its 13th, different pair


def test_the_judge_reads_responses_without_reasoning_and_a_long_input_cut_to_its_last_turn(tmp_path):
    history = [turn("System", "Be brief."), turn("Human", "earlier " * 40), turn("Assistant", "earlier answer")]
    records = [record("QA", n, history=history, chosen="<think>long thought</think>short answer") for n in range(3)]
    path = tmp_path / "sense-label1.json"
    path.write_text(json.dumps(records))

    def words(text):  # a stand-in tokenizer: one token per word
        return len(text.split())

    labels = load_human_labels(path, split=LabelSplit(dev_pairs_per_topic=1, max_input_tokens=40),
                               count_tokens=words)
    label = labels.dev[0]
    assert label.cut and labels.inputs_cut == 3
    assert [message.role for message in label.judged.context] == ["user"]  # the request alone
    assert label.judged.chosen.content == "short answer"
    assert [message.role for message in label.written_from.context] == ["system", "user", "assistant", "user"]
    assert label.written_from.chosen.content == "<think>long thought</think>short answer"

    kept = load_human_labels(path, split=LabelSplit(dev_pairs_per_topic=1, max_input_tokens=None),
                             count_tokens=words)
    assert not kept.inputs_cut and len(kept.dev[0].judged.context) == 4

    def no_tokenizer(text):
        raise AssertionError("a text of no more bytes than the limit needs no tokenizer")

    short = load_human_labels(path, split=LabelSplit(dev_pairs_per_topic=1), count_tokens=no_tokenizer)
    assert not short.inputs_cut


@pytest.mark.parametrize(("change", "field", "problem"), [
    (lambda row: row.pop("dataset"), "dataset", "missing"),
    (lambda row: row.update(dataset="QA"), "dataset", "expected 'sense_bmk:<Topic>'"),
    (lambda row: row.update(prompt=[]), "prompt", "non-empty list of turns"),
    (lambda row: row["prompt"][0].update({"from": "Robot"}), "prompt[0].from", "Human, Assistant or System"),
    (lambda row: row["chosen"]["value"][0].pop("value"), "chosen.value[0].value", "a part's text"),
    (lambda row: row.update(rejected=3), "rejected", "expected a response"),
])
def test_a_bad_record_is_one_error_naming_the_file_row_and_field(tmp_path, change, field, problem):
    records = two_topics()
    change(records[5])
    path = tmp_path / "sense-label1.json"
    path.write_text(json.dumps(records))
    with pytest.raises(DataError, match=problem) as error:
        load_human_labels(path)
    assert (error.value.path, error.value.row, error.value.field) == (str(path), 5, field)


def test_the_annotator_is_chosen_in_the_folder_and_must_match_a_single_file(tmp_path):
    folder = write_labels(tmp_path / "human_label", lambda annotator: [], annotators=(1, 3))
    assert annotator_file(folder, "3") == annotator_file(folder, "sense-label3") == folder / "sense-label3.json"
    with pytest.raises(ConfigError, match="several annotators") as error:
        annotator_file(folder, None)
    assert "--annotator 1, 2 or 3" in error.value.hint
    with pytest.raises(ConfigError, match=r"no sense-label2\.json"):
        annotator_file(folder, "2")
    assert annotator_file(folder / "sense-label1.json", "1") == folder / "sense-label1.json"
    with pytest.raises(ConfigError, match="does not match"):
        annotator_file(folder / "sense-label1.json", "3")
    with pytest.raises(DataError, match="no such file or folder"):
        annotator_file(tmp_path / "absent", None)


@pytest.fixture
def tracker(fake_runner):
    return fake_runner


@pytest.fixture
def scripted(monkeypatch):
    lm = DummyLM([{"preference": f"Prefers {i}.", "analysis": "a", "decision": "Response A" if i % 3 else "Response B"}
                  for i in range(500)], adapter=dspy.JSONAdapter())
    for module in (sensejudge_selection, sensejudge_evaluation):
        monkeypatch.setattr(module, "lm_context", lambda *args: dspy.context(lm=lm, adapter=dspy.JSONAdapter()))
    return lm


def run_step(step, options):
    return runner.run_step("sensejudge", step, options, Settings(threads=1), lambda text: None)


def test_select_and_evaluate_run_per_topic_on_one_annotators_human_labels(scripted, tracker, tmp_path):
    folder = write_labels(tmp_path / "human_label", lambda annotator: two_topics(count=3))
    given = {"human_labels": folder, "annotator": "1", "dev_pairs_per_topic": 2,
             "judge_file": tmp_path / "judge.json"}
    selection = run_step("select", SelectOptions(**given, max_pair_descriptions=1))
    assert list(selection.topics) == ["Math", "QA"]
    assert [selection.records[topic].examples for topic in ("Math", "QA")] == [4, 4]  # 2 dev pairs, both orders
    assert selection.usage["extraction"].calls == 4  # per topic: one dev pair's description and the aggregate
    params = tracker.runs[0].params
    assert (params["labels"], params["dev_pairs_per_topic"], params["split_seed"]) == ("human", 2, 42)
    assert params["description_length"] == "one_sentence" and params["annotator"] == "sense-label1"

    evaluated = EvaluateOptions(**given, output_dir=tmp_path / "out")
    outcome = run_step("evaluate", evaluated)
    assert outcome.labels == "human (sense-label1)" and outcome.ranking is None
    assert outcome.selected.report.accuracy.n == 4 and set(outcome.selected.topics) == {"Math", "QA"}
    text = format_evaluation(outcome)
    assert f"model ranking: none ({NO_MODELS})" in text and SIMULATED_NOTE not in text
    assert "kendall_tau_wins" not in tracker.runs[1].metrics

    with pytest.raises(ConfigError, match="could be among the test pairs"):  # another split: read before any model
        read_held_out_pairs(EvaluateOptions(**{**given, "split_seed": 7}))

    saved = json.loads(given["judge_file"].read_text())  # a judge selected before the reference's subsets were kept
    for selection in saved["prefcraft"]["topics"].values():
        del selection["record"]["reference_subsets"]
    given["judge_file"].write_text(json.dumps(saved))
    with pytest.raises(ConfigError, match="run `prefcraft sensejudge select` again"):
        read_held_out_pairs(evaluated)


def test_the_extractor_reads_a_cut_pair_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(human_labels, "_cl100k_tokens", lambda text: len(text.split()))  # litellm loads in seconds
    history = [turn("Human", "earlier"), turn("Assistant", "earlier answer")]
    path = tmp_path / "sense-label1.json"
    path.write_text(json.dumps([record("QA", n, history=history, chosen="word " * 10_000) for n in range(2)]))
    options = SelectOptions(human_labels=path, dev_pairs_per_topic=1)
    pairs = read_annotator_pairs(options, None, topics=True, models=False)
    dev = pairs.annotator.train
    assert len(dev[0].context) == 1 and pairs.params["inputs_cut"] == 2  # the default limit: 10,000 tokens
    assert [len(pair.context) for pair in pairs.as_written(dev)] == [3]
    assert pairs.topic_of[pair_id(dev[0])] == "QA"


def test_the_human_label_and_description_flags_reach_the_options():
    options = parse_step(COMPONENT, "select", ["--human-labels", "labels", "--annotator", "2", "--no-long-input-cut",
                                               "--dev-pairs-per-topic", "5", "--description-length", "three_sentences"])
    assert options.label_split() == LabelSplit(dev_pairs_per_topic=5, seed=42, max_input_tokens=None)
    assert options.description_length == "three_sentences"
    default = parse_step(COMPONENT, "evaluate", [])
    assert default.human_labels is None and default.label_split() == LabelSplit()


def test_the_extractor_asks_for_one_sentence_by_default_or_for_about_three():
    short = PreferenceExtractor()
    assert short.extract.signature.instructions == EXTRACT_ONE_SENTENCE
    assert short.aggregate.signature.instructions == AGGREGATE_ONE_SENTENCE
    paper = PreferenceExtractor(length="three_sentences")
    assert "about three single sentences" in paper.extract.signature.instructions
    assert paper.extract.signature.instructions == ExtractPreference.instructions

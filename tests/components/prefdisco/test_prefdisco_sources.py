"""Every task of the released PrefDisco benchmark through the public loader: each source dataset's row shape, the hub
dataset's folder layout (a local copy, or the dataset by name from a hub cache, offline), and the error a row no rule
can read gives."""

import logging

import pytest

from prefcraft.components.prefdisco.data import load_scenarios, split_scenarios
from prefcraft.errors import DataError
from tests.components.prefdisco.test_prefdisco_loader import METADATA, scenario_row, write

# One source row per task, in the shape of the dataset the reference's config names for it (extra keys included),
# with the question, options, answer and solution the reference's normalization makes of it, checked by hand.
TASK_ROWS = {
    "math": ({"problem": "What is $3 \\cdot 4$?", "solution": "Multiplying, $\\boxed{12}$.", "answer": "12",
              "subject": "Prealgebra", "level": 1, "unique_id": "test/prealgebra/7.json"},
             "What is $3 \\cdot 4$?", "12", "Multiplying, $\\boxed{12}$."),
    "aime": ({"ID": "1999-3", "Year": 1999, "Problem Number": 3, "Question": "Find the sum of all positive n.",
              "Answer": 18, "Part": None},
             "Find the sum of all positive n.", "18", ""),
    "commonsenseqa": ({"id": "1a2b", "question": "Where is a fork kept?", "question_concept": "fork",
                       "choices": {"label": ["A", "B", "C"], "text": ["drawer", "roof", "river"]}, "answerKey": "A"},
                      "Where is a fork kept?\nA. drawer\nB. roof\nC. river", "A", ""),
    "logiqa": ({"context": "All cats purr. Tom is a cat.", "query": "Which must be true?",
                "options": ["Tom barks", "Tom sleeps", "Tom purrs", "Tom flies"], "correct_option": 2},
               "All cats purr. Tom is a cat.\n\nWhich must be true?\nA. Tom barks\nB. Tom sleeps\nC. Tom purrs\n"
               "D. Tom flies", "C", ""),
    "mascqa": ({"question": "What is the coordination number of an FCC lattice?", "correct_answer": "12",
                "question_type": "NUM", "topic": "crystal structure"},
               "What is the coordination number of an FCC lattice?", "12", ""),
    "medqa": ({"question": "Which drug treats her infection?", "answer": "Nitrofurantoin",
               "options": {"A": "Ampicillin", "B": "Nitrofurantoin", "C": "Doxycycline", "D": "Ceftriaxone"},
               "meta_info": "step1", "answer_idx": "B", "metamap_phrases": ["drug", "infection"]},
              "Which drug treats her infection?\nA. Ampicillin\nB. Nitrofurantoin\nC. Doxycycline\nD. Ceftriaxone", "B",
              ""),
    "mmlu": ({"question": "How many elements has Z_4?", "subject": "abstract_algebra", "choices": ["2", "3", "4", "8"],
              "answer": 2},
             "How many elements has Z_4?\nA. 2\nB. 3\nC. 4\nD. 8", "C", ""),
    "scienceqa": ({"image": None, "question": "Which word is a verb?", "choices": ["run", "blue"], "answer": 0,
                   "hint": "", "task": "closed choice", "grade": "grade2", "subject": "language science",
                   "topic": "grammar", "category": "Parts of speech", "skill": "Identify verbs",
                   "lecture": "A verb names an action.", "solution": "Run names an action."},
                  "Which word is a verb?\nA. run\nB. blue", "A", "A verb names an action.\n\nRun names an action."),
    "simpleqa": ({"problem": "In which year did the bridge open?", "answer": "1932", "metadata": "{'topic': 'Art'}"},
                 "In which year did the bridge open?", "1932", ""),
    "socialiqa": ({"context": "Kai lent Ash a pen.", "question": "How will Ash feel?", "answerA": "angry",
                   "answerB": "bored", "answerC": "thankful", "label": "3"},
                  "Kai lent Ash a pen.\n\nHow will Ash feel?\nA. angry\nB. bored\nC. thankful", "C", ""),
}


@pytest.mark.parametrize("task", sorted(TASK_ROWS))
def test_each_task_s_source_row_loads_as_the_reference_normalizes_it(tmp_path, task):
    source, question, answer, solution = TASK_ROWS[task]
    [scenario] = load_scenarios(write(tmp_path, [{"type": "metadata", "task": task},
                                                 scenario_row(original_problem=source)]))
    assert (scenario.task, scenario.question, scenario.answer, scenario.solution) == (task, question, answer, solution)


def test_a_record_with_a_parsed_problem_is_taken_as_it_is(tmp_path):
    parsed = {"question": "Pick one.", "options": {"A": "x", "B": "y"}, "answer": "B", "solution": None}
    [scenario] = load_scenarios(write(tmp_path, [METADATA, scenario_row(parsed_problem=parsed,
                                                                        original_problem={"Question": "unread"})]))
    assert (scenario.question, scenario.answer) == ("Pick one.\nA. x\nB. y", "B")


def test_an_empty_answer_is_kept_as_the_reference_keeps_it_with_a_warning(tmp_path, caplog):
    test_split_row = dict(TASK_ROWS["commonsenseqa"][0], answerKey="")
    with caplog.at_level(logging.WARNING):
        [scenario] = load_scenarios(write(tmp_path, [METADATA, scenario_row(original_problem=test_split_row)]))
    assert scenario.answer == "" and "1 scenario(s) have an empty gold answer" in caplog.text


@pytest.mark.parametrize(("problem", "field", "message"), [
    ({"solution": "x", "answer": "1"}, "original_problem.question",
     "none of query, question, problem, Question, prompt or context has text"),
    ({"Question": "Sum?", "Part": None}, "original_problem.answer", "none of correct_answer, answerKey"),
    ({"question": "Q?", "options": ["a", "b"], "correct_option": 2}, "original_problem.correct_option",
     "answer 2 names none of the 2 options"),
    ({"context": "c", "question": "q", "answerA": "a", "answerB": "b", "label": "3"}, "original_problem.label",
     "answer '3' names none of the 2 options"),
    ({"question": "Q?", "choices": {"label": ["A", "B"], "text": ["a"]}, "answerKey": "A"}, "original_problem.choices",
     "2 labels for 1 option texts"),
    (None, "original_problem", "missing"),
])
def test_a_row_no_rule_can_read_names_the_file_row_and_field(tmp_path, problem, field, message):
    bad = scenario_row(problem_id="p2", original_problem=problem)
    if problem is None:
        del bad["original_problem"]
    path = write(tmp_path, [METADATA, scenario_row(), bad])
    with pytest.raises(DataError) as raised:
        load_scenarios(path)
    assert (raised.value.path, raised.value.row, raised.value.field) == (str(path), 2, field)
    assert message in raised.value.message


def released_row(problem_index, persona_id, problem):
    """A record as the reference's generator writes it: `problem_<index>_<persona id>`, the persona's `id`, a
    preference on a 1-5 scale."""
    return scenario_row(
        problem_id=f"problem_{problem_index}_{persona_id}", original_problem=problem,
        persona={"id": persona_id, "name": "Ana Lima"}, generation_success=True,
        persona_preferences={
            "Explanation Depth": {"description": "detail", "value_range": "1-5 (1: brief, 5: thorough)", "value": 4,
                                  "local_importance": 5, "justification": "a teacher", "type": "expertise"}},
        evaluation_rubric={"evaluation_criteria": [
            {"preference": "Explanation Depth", "description": "detail", "weight": 1.0,
             "levels": [{"score": 1, "description": "terse"}, {"score": 5, "description": "thorough"}]}]})


def write_benchmark(snapshot, benchmarks=("benchmark_1k", "benchmark_5k")):
    """A copy of stellalisy/prefq-bench in its layout, each file with the generator's metadata line first:
    benchmark_1k holds math and socialiqa (3 problems x 2 personas each), benchmark_5k holds aime (1 scenario)."""
    generator_metadata = {"type": "metadata", "dataset": "HuggingFaceH4/MATH-500", "personas_per_problem": 10}
    tasks = {"benchmark_1k": {"math": 3, "socialiqa": 3}, "benchmark_5k": {"aime": 1}}
    for benchmark in benchmarks:
        for task, problems in tasks[benchmark].items():
            personas = ("lima_1a", "ng_2b") if problems > 1 else ("x_1",)
            rows = [released_row(index, persona, TASK_ROWS[task][0])
                    for index in range(problems) for persona in personas]
            (snapshot / benchmark / task).mkdir(parents=True)
            write(snapshot / benchmark / task, [generator_metadata, *rows], name="train.jsonl")
    return snapshot


def test_a_folder_in_the_hub_layout_loads_a_task_per_folder(tmp_path):
    snapshot = write_benchmark(tmp_path / "prefq-bench")

    scenarios = load_scenarios(snapshot)
    assert len(scenarios) == 12 and {s.task for s in scenarios} == {"math", "socialiqa"}
    first = scenarios[0]
    assert (first.scenario_id, first.problem_id, first.task) == ("math/problem_0:lima_1a", "math/problem_0", "math")
    assert first.criteria[0].value == "4" and first.criteria[0].value_range == ("1-5 (1: brief, 5: thorough)",)
    test = split_scenarios(scenarios, "test", val_share=0.34, test_share=0.34, source=snapshot)
    assert [s.scenario_id for s in test] == ["math/problem_2:lima_1a", "math/problem_2:ng_2b",
                                            "socialiqa/problem_2:lima_1a", "socialiqa/problem_2:ng_2b"]
    assert [s.task for s in load_scenarios(snapshot / "benchmark_5k")] == ["aime"]


def test_a_folder_without_scenario_files_is_an_error(tmp_path):
    with pytest.raises(DataError) as raised:
        load_scenarios(tmp_path)
    assert raised.value.problem == "no .jsonl file in this folder"
    assert "benchmark_1k/<task>/*.jsonl" in raised.value.hint


HUB_COMMIT = "5e1f0c3d9b2a47e6a8c1f0d2e3b4a5c6d7e8f901"


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """An empty Hugging Face hub cache, offline: nothing can be downloaded."""
    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


def cache_snapshot(cache, repo_id="stellalisy/prefq-bench"):
    """The folder of `repo_id`'s main revision in the hub cache's layout: refs/main names the commit of snapshots/."""
    repo = cache / f"datasets--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(HUB_COMMIT)
    return repo / "snapshots" / HUB_COMMIT


def test_the_hub_dataset_by_name_loads_its_cached_benchmark_1k_as_a_local_copy_does(tmp_path, hub_cache):
    write_benchmark(cache_snapshot(hub_cache), benchmarks=("benchmark_1k",))

    scenarios = load_scenarios("stellalisy/prefq-bench")
    assert len(scenarios) == 12 and {s.task for s in scenarios} == {"math", "socialiqa"}
    assert scenarios[0].scenario_id == "math/problem_0:lima_1a"
    assert scenarios == load_scenarios(write_benchmark(tmp_path / "local-copy"))


def test_an_uncached_hub_name_offline_is_one_error_saying_how_to_give_a_local_copy(hub_cache):
    with pytest.raises(DataError) as raised:
        load_scenarios("stellalisy/prefq-bench")
    assert raised.value.path == "stellalisy/prefq-bench" and raised.value.__suppress_context__
    assert "not readable from the Hugging Face hub (HF_HUB_OFFLINE is set" in raised.value.problem
    assert "download stellalisy/prefq-bench --repo-type dataset" in raised.value.hint
    assert "--local-dir DIR" in raised.value.hint and "--data DIR" in raised.value.hint


def test_a_hub_dataset_without_benchmark_1k_is_an_error(hub_cache):
    write_benchmark(cache_snapshot(hub_cache, "someone/other-bench"), benchmarks=("benchmark_5k",))
    with pytest.raises(DataError) as raised:
        load_scenarios("someone/other-bench")
    assert (raised.value.path, raised.value.problem) == ("someone/other-bench",
                                                         "the hub dataset has no benchmark_1k/ folder")


def test_rows_with_the_none_entries_arrow_gives_load(tmp_path):
    # Arrow (a .parquet file) gives every row of a file every key of the file: other rows' preferences and source
    # keys as None.
    row = released_row(0, "lima_1a", dict(TASK_ROWS["mmlu"][0], answerKey=None, options=None, Question=None))
    row["persona_preferences"]["Tone"] = None
    [scenario] = load_scenarios(write(tmp_path, [dict(METADATA, problem_id=None, persona=None), row]))
    assert (scenario.question.splitlines()[-1], scenario.answer, len(scenario.criteria)) == ("D. 8", "C", 1)


def test_a_released_problem_id_is_read_without_its_persona(tmp_path):
    rows = [released_row(7, persona, TASK_ROWS["aime"][0]) for persona in ("lima_1a", "ng_2b")]
    scenarios = load_scenarios(write(tmp_path, [METADATA, *rows]))
    assert [(s.scenario_id, s.problem_id, s.answer) for s in scenarios] == [
        ("problem_7:lima_1a", "problem_7", "18"), ("problem_7:ng_2b", "problem_7", "18")]

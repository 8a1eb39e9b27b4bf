"""Prompt snapshots: the exact messages every program sends to its model, as committed, reviewed text files.

Each case runs one program on a fixed input (the bundled sample data, formatted by the same functions the commands
use) under the project's adapter and a capturing fake model (tests/capturing_lm.py), and renders every call it made:
messages by role, the JSON schema asked for, temperature and max_tokens. The test compares that with
`tests/snapshots/<component>/<program>.txt` and fails with a unified diff, so that any prompt change is a visible diff.
`PREFCRAFT_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/test_prompt_snapshots.py` rewrites them
(tests/snapshots/README.md says how to review one).
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import json
import os
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import dspy
import pytest
from capturing_lm import capturing_lm, render_calls

import prefcraft.programs.cupid
import prefcraft.programs.judge
import prefcraft.programs.lampqa
import prefcraft.programs.memory
import prefcraft.programs.persona
import prefcraft.programs.prefdisco
import prefcraft.programs.responder
import prefcraft.programs.sensejudge
from prefcraft.components.cupid.data import load_instances
from prefcraft.components.lampqa.data import load_questions
from prefcraft.components.prefdisco.data import SAMPLE_SCENARIOS, load_scenarios
from prefcraft.components.prefdisco.evaluation import load_asker
from prefcraft.components.prefdisco.metrics import grading_example
from prefcraft.components.sensejudge.simulation import ANNOTATOR_HEADING, DEFAULT_PERSONA, VARIANTS, SimulationConfig
from prefcraft.components.synthesizeme.evaluation import DEMOGRAPHICS_HEADING, MEMORY_HEADING, memory_interactions
from prefcraft.components.synthesizeme.fit import PERSONA_SYNTHESIZER, load_persona_synthesizer
from prefcraft.components.synthesizeme.samples import SAMPLE_USERS
from prefcraft.engine.adapter import LengthBounds, SchemaAdapter
from prefcraft.engine.lm import build_adapter
from prefcraft.loaders.personal_reward_bench import (
    format_conversation,
    group_by_user,
    judge_examples,
    load_pairs,
)
from prefcraft.optimizers.artifacts import COMPILED_DIR, COMPILED_INDEX
from prefcraft.optimizers.cupid import PROGRAM_NAME as CUPID_PROGRAM
from prefcraft.optimizers.cupid import load_inferrer
from prefcraft.optimizers.lampqa import PROGRAM_NAME as LAMPQA_PROGRAM
from prefcraft.optimizers.lampqa import load_planpers
from prefcraft.optimizers.prefdisco import PROGRAM_NAME as PREFDISCO_PROGRAM
from prefcraft.optimizers.synthesizeme import format_judgments
from prefcraft.programs.cupid import (
    PreferenceInferrer,
    PreferenceMatch,
    ResponseGenerator,
    ResponseJudge,
    SummaryResponder,
)
from prefcraft.programs.judge import PreferenceJudge, ProfileJudge
from prefcraft.programs.lampqa import AspectJudge, NoPersonalization, PlanPers, ProfilePost, RAGPersonalization
from prefcraft.programs.memory import MemoryBuilder
from prefcraft.programs.persona import PersonaSynthesizer
from prefcraft.programs.prefdisco import FixedQuestionAsker, QuestionAsker, RubricGrader, UserSimulator
from prefcraft.programs.prefdisco import Responder as PrefDiscoResponder
from prefcraft.programs.responder import Responder
from prefcraft.programs.sensejudge import DescriptionJudge, PreferenceExtractor, SelectedJudge
from prefcraft.settings import ModelSettings, SmallModelProfile

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE_VARIABLE = "PREFCRAFT_UPDATE_SNAPSHOTS"
REGENERATE = f"{UPDATE_VARIABLE}=1 .venv/bin/python -m pytest tests/test_prompt_snapshots.py"
PROGRAM_MODULES = tuple(importlib.import_module(f"prefcraft.programs.{info.name}")
                        for info in pkgutil.iter_modules(prefcraft.programs.__path__))
# The embedded default: the model string and sampling commands use. The messages are the same in every structured-output
# dialect; the fake reads the schema from the json_schema form.
MODEL = ModelSettings()
PROFILES: dict[str, SmallModelProfile | None] = {"small": SmallModelProfile(), "paper": None}
"""Each snapshot in both profiles: `small`, the small-model profile's defaults (what the embedded default turns on), and
`paper`, no profile (max_tokens alone bounds a reply)."""



@dataclass(frozen=True)
class Case:
    component: str
    program: str
    covers: tuple[type[dspy.Module], ...]
    """The program classes whose calls this snapshot shows."""
    run: Callable[[SmallModelProfile | None], object]
    """Runs the program once on its fixed input, on the model in the current dspy.context, built as the commands
    build it under the profile (None: no profile)."""
    description: str

    def path(self, profile: str) -> Path:
        return SNAPSHOTS / self.component / f"{self.program}.{profile}.txt"


CASES: list[Case] = []


Run = Callable[[SmallModelProfile | None], object]


def case(component: str, program: str, *covers: type[dspy.Module]) -> Callable[[Run], Run]:
    def register(run: Run) -> Run:
        CASES.append(Case(component, program, covers, run, inspect.getdoc(run) or ""))
        return run

    return register


# Fixed inputs, from the bundled sample data.

def _sample_user_pairs():
    users = group_by_user(load_pairs(SAMPLE_USERS))
    return users[sorted(users)[0]]


def _judge_inputs(example: dspy.Example) -> dict[str, str]:
    return {name: example[name] for name in example.inputs().keys()}


def _first_pair_both_orders() -> list[dspy.Example]:
    return judge_examples(_sample_user_pairs().train[0])


def _verified_trace(example: dspy.Example) -> dspy.Example:
    """A step-1 trace as SynthesizeMe keeps it: the judge's inputs, its reasoning and the labelled preference."""
    return example.copy(reasoning="The user's chosen answer is the shorter one, with a direct first sentence.")


def _cupid_instance():
    instance = load_instances().instances[0]
    return instance.model_copy(update={"prior_interactions": instance.prior_interactions[:3]})


LONG_POST = ProfilePost(id="long-post", text=(
    "I have been sketching faces from old family photos for a few months, mostly in pencil at the kitchen table "
    "because my apartment has no room for an easel. The eyes always come out flat and the proportions drift "
    "towards the chin. I would like a routine I can keep up in half an hour a day, and ideally a class or a group "
    "nearby where I could draw with other people and get some feedback."))


def _lampqa_question():
    """The first sample test question, with its first four profile posts and one long literal post (longer than the
    small-model profile shows of a post)."""
    question = load_questions(split="test").questions[0]
    return question.model_copy(update={"profile": (*question.profile[:4], LONG_POST)})


def _post_chars(profile: SmallModelProfile | None) -> int | None:
    return profile.post_chars if profile else None


def _scenario():
    return load_scenarios(SAMPLE_SCENARIOS)[0]


# SynthesizeMe (programs/judge.py, persona.py, memory.py)

@case("synthesizeme", "judge", PreferenceJudge)
def run_default_judge(profile: SmallModelProfile | None):
    """The judge without user context (SynthesizeMe's default LLM-as-judge) on the first sample user's first train
    pair, chosen completion first."""
    return PreferenceJudge()(**_judge_inputs(_first_pair_both_orders()[0]))


@case("synthesizeme", "personal_judge", PreferenceJudge)
def run_personal_judge(profile: SmallModelProfile | None):
    """A fitted personal judge: a persona in its instructions and two demos (a verified trace with reasoning, and a
    labelled pair without), on the first sample user's second train pair."""
    first, second = _first_pair_both_orders()
    judge = PreferenceJudge("A busy reader who wants the answer in the first sentence and no padding.")
    judge.demos = [_verified_trace(first), second]
    return judge(**_judge_inputs(judge_examples(_sample_user_pairs().train[1])[0]))


@case("synthesizeme", "persona", PersonaSynthesizer)
def run_persona(profile: SmallModelProfile | None):
    """The persona synthesizer on two verified traces (the first sample user's first train pair in both orders),
    formatted as SynthesizeMe's step 2 reads them."""
    return _synthesize(PersonaSynthesizer())


def _synthesize(synthesizer: PersonaSynthesizer) -> dspy.Prediction:
    traces = [_verified_trace(example) for example in _first_pair_both_orders()]
    return synthesizer(past_judgments=format_judgments(traces))


@case("synthesizeme", "memory", MemoryBuilder, PreferenceJudge)
def run_memory_judge(profile: SmallModelProfile | None):
    """The Memory baseline as `evaluate --method memory` builds it: insights from each of the first two context pairs
    of the first sample user, then the judge with the memory as user context."""
    user = _sample_user_pairs()
    user = type(user)(user.user_id, train=user.train[:2], val=[], test=user.test)
    judge = PreferenceJudge(MemoryBuilder()(interactions=memory_interactions(user)).memory, heading=MEMORY_HEADING)
    return judge(**_judge_inputs(judge_examples(user.test[0])[0]))


@case("synthesizeme", "demographics_judge", PreferenceJudge)
def run_demographics_judge(profile: SmallModelProfile | None):
    """The chain-of-thought judge with a demographic profile as user context (`evaluate --method demographics
    --demographics-judge persona_judge`)."""
    judge = PreferenceJudge("age: 25-34\nlocation: Europe\nenglish_proficiency: fluent", heading=DEMOGRAPHICS_HEADING)
    return judge(**_judge_inputs(_first_pair_both_orders()[1]))


@case("synthesizeme", "profile_judge", ProfileJudge)
def run_profile_judge(profile: SmallModelProfile | None):
    """The Demographics baseline's default judge (Dong et al.'s prompt, `evaluate --method demographics`) told a
    PRISM-style profile."""
    judge = ProfileJudge("Age: 25-34 years old\nGender: Female\nLiving Country: United Kingdom")
    return judge(**_judge_inputs(_first_pair_both_orders()[1]))


# SenseJudge (programs/sensejudge.py, responder.py)

@case("sensejudge", "extractor", PreferenceExtractor)
def run_extractor(profile: SmallModelProfile | None):
    """Descriptions from two labelled pairs (the first sample user's first train pairs): one per pair, then the
    aggregate over both."""
    pairs = [{"conversation": format_conversation(pair.context), "chosen_response": pair.chosen.content,
              "rejected_response": pair.rejected.content} for pair in _sample_user_pairs().train[:2]]
    return PreferenceExtractor()(pairs=pairs)


@case("sensejudge", "selected_judge", SelectedJudge, DescriptionJudge)
def run_selected_judge(profile: SmallModelProfile | None):
    """The majority vote of three description-conditioned judges (the empty description and two written ones)."""
    judge = SelectedJudge(["", "Prefers short, direct answers.", "Values step-by-step structure and examples."])
    return judge(**_judge_inputs(_first_pair_both_orders()[0]))


@case("sensejudge", "simulated_responder", Responder)
def run_simulated_responder(profile: SmallModelProfile | None):
    """A response model of `sensejudge simulate`: the concise variant's system prompt at the simulation's response
    temperature, under the adapter the command gives its responders (SimulationConfig's max_response_chars)."""
    config = SimulationConfig()
    bounds = LengthBounds(string_chars=config.max_response_chars)
    adapter = SchemaAdapter(dialect=MODEL.dialect, bounds=bounds)
    with dspy.context(adapter=adapter):
        responder = Responder(VARIANTS["concise"], temperature=config.response_temperature)
        return responder(conversation=format_conversation(_sample_user_pairs().train[0].context))


@case("sensejudge", "simulated_annotator", PreferenceJudge)
def run_simulated_annotator(profile: SmallModelProfile | None):
    """The simulated annotator of `sensejudge simulate`: the judge with the default persona."""
    annotator = PreferenceJudge(DEFAULT_PERSONA, heading=ANNOTATOR_HEADING)
    return annotator(**_judge_inputs(_first_pair_both_orders()[0]))


# PrefDisco (programs/prefdisco.py)

@case("prefdisco", "asker", QuestionAsker)
def run_asker(profile: SmallModelProfile | None):
    """Discovery: the question asker with two turns on the first sample scenario; the user's replies are literals,
    so that this file shows the asker's calls only."""
    return _ask(QuestionAsker(max_turns=2))


@case("prefdisco", "asker_fixed", FixedQuestionAsker)
def run_fixed_asker(profile: SmallModelProfile | None):
    """Discovery with a fixed question count (the paper's Figure 5): exactly two turns of questions on the first sample
    scenario, with literal replies."""
    return _ask(FixedQuestionAsker(questions=2))


def _ask(asker: QuestionAsker | FixedQuestionAsker) -> dspy.Prediction:
    replies = iter(["Keep it short, please.", "Just the equation and the number."])
    return asker(problem=_scenario().question, user=lambda question: next(replies))


@case("prefdisco", "baseline", PrefDiscoResponder)
def run_baseline(profile: SmallModelProfile | None):
    """Baseline: one answer with nothing known of the user."""
    return PrefDiscoResponder()(problem=_scenario().question, user_preferences="")


@case("prefdisco", "oracle", PrefDiscoResponder)
def run_oracle(profile: SmallModelProfile | None):
    """Oracle: one answer given the hidden profile as the evaluation passes it."""
    scenario = _scenario()
    return PrefDiscoResponder()(problem=scenario.question, user_preferences=scenario.hidden_profile())


@case("prefdisco", "user_simulator", UserSimulator)
def run_user_simulator(profile: SmallModelProfile | None):
    """The passive user simulator (the paper's default) answering one question from the hidden profile."""
    return UserSimulator()(hidden_profile=_scenario().hidden_profile(),
                           chat_history="Assistant: How should I write the steps?")


@case("prefdisco", "user_simulator_collaborative", UserSimulator)
def run_collaborative_simulator(profile: SmallModelProfile | None):
    """The collaborative user simulator answering one question from the hidden profile."""
    simulator = UserSimulator(collaborative=True)
    return simulator(hidden_profile=_scenario().hidden_profile(),
                     chat_history="Assistant: How should I write the steps?")


@case("prefdisco", "grader", RubricGrader)
def run_grader(profile: SmallModelProfile | None):
    """The rubric grader on a literal response: one call per criterion, then the correctness check."""
    example = grading_example(_scenario(), "12 pens are 4 groups of 3, and 4 x $2 = $8.", "8")
    return RubricGrader()(**{name: example[name] for name in example.inputs().keys()})


# CUPID (programs/cupid.py)

def _infer(variant: str) -> dspy.Prediction:
    return _infer_with(PreferenceInferrer(variant))


def _infer_with(inferrer: PreferenceInferrer) -> dspy.Prediction:
    instance = _cupid_instance()
    return inferrer(sessions=instance.sessions(), current_request=instance.current_request)


@case("cupid", "inferrer_all", PreferenceInferrer)
def run_inferrer_all(profile: SmallModelProfile | None):
    """The inferrer from every prior session at once (the paper's zero-shot setting); the first sample instance with
    its first three sessions."""
    return _infer("all")


@case("cupid", "inferrer_relevant", PreferenceInferrer)
def run_inferrer_relevant(profile: SmallModelProfile | None):
    """The inferrer that first selects the relevant sessions; same input."""
    return _infer("relevant")


@case("cupid", "inferrer_summaries", PreferenceInferrer)
def run_inferrer_summaries(profile: SmallModelProfile | None):
    """The inferrer from the summaries of every session, written in one call over the log (the paper's); same input."""
    return _infer("summaries")


@case("cupid", "inferrer_summaries_per_session", PreferenceInferrer)
def run_inferrer_summaries_per_session(profile: SmallModelProfile | None):
    """The inferrer from one summary per session, each written in its own call (for a small context window); same
    input."""
    return _infer("summaries-per-session")


@case("cupid", "preference_match", PreferenceMatch)
def run_preference_match(profile: SmallModelProfile | None):
    """The metric's program: a literal inferred preference decomposed into a checklist, then matched against the gold
    preference (precision) and the gold checklist against the inferred preference (recall)."""
    instance = _cupid_instance()
    return PreferenceMatch()(preference="Keep messages to Dana short and lead with the decision.",
                             gold_preference=instance.current_contextual_preference,
                             gold_checklist=instance.current_checklist)


@case("cupid", "response_no_context", ResponseGenerator)
def run_response_no_context(profile: SmallModelProfile | None):
    """A response to the current request with no user context."""
    return ResponseGenerator()(request=_cupid_instance().current_request)


@case("cupid", "response_from_sessions", ResponseGenerator)
def run_response_from_sessions(profile: SmallModelProfile | None):
    """A response given the prior sessions."""
    instance = _cupid_instance()
    return ResponseGenerator()(request=instance.current_request, sessions=instance.sessions())


@case("cupid", "response_from_summaries", SummaryResponder)
def run_response_from_summaries(profile: SmallModelProfile | None):
    """A response written from the prior sessions' summaries (the paper's Table 10): the log summarised in one call,
    then the generator given the summaries."""
    instance = _cupid_instance()
    return SummaryResponder()(request=instance.current_request, sessions=instance.sessions())


@case("cupid", "response_from_preference", ResponseGenerator)
def run_response_from_preference(profile: SmallModelProfile | None):
    """A response given a preference (the gold one here; evaluation passes the inferred one)."""
    instance = _cupid_instance()
    return ResponseGenerator()(request=instance.current_request, preference=instance.current_contextual_preference)


@case("cupid", "response_judge", ResponseJudge)
def run_response_judge(profile: SmallModelProfile | None):
    """The 1-10 response judge on a literal response, against the gold preference and checklist."""
    instance = _cupid_instance()
    return ResponseJudge()(request=instance.current_request, response="Dana, can we move the launch to 3 June?",
                           preference=instance.current_contextual_preference, checklist=instance.current_checklist)


@case("cupid", "response_judge_figure16", ResponseJudge)
def run_response_judge_figure16(profile: SmallModelProfile | None):
    """The same judgment with Figure 16's wording (`--judge-prompt paper`): no rating labels."""
    instance = _cupid_instance()
    return ResponseJudge("paper")(request=instance.current_request, response="Dana, can we move the launch to 3 June?",
                                  preference=instance.current_contextual_preference,
                                  checklist=instance.current_checklist)


# LaMP-QA (programs/lampqa.py)

@case("lampqa", "no_personalization", NoPersonalization)
def run_no_personalization(profile: SmallModelProfile | None):
    """The question alone: the first sample test question."""
    question = _lampqa_question()
    return NoPersonalization()(question=question.question, profile=question.profile)


@case("lampqa", "rag", RAGPersonalization)
def run_rag(profile: SmallModelProfile | None):
    """Retrieval (BM25) over the profile (four sample posts and a long literal one), then the answer."""
    question = _lampqa_question()
    return RAGPersonalization(post_chars=_post_chars(profile))(question=question.question, profile=question.profile)


@case("lampqa", "planpers", PlanPers)
def run_planpers(profile: SmallModelProfile | None):
    """Retrieval, the aspect planner, then the answer with the plan."""
    return _plan_and_answer(PlanPers(post_chars=_post_chars(profile)))


def _plan_and_answer(program: PlanPers) -> dspy.Prediction:
    question = _lampqa_question()
    return program(question=question.question, profile=question.profile)


@case("lampqa", "aspect_judge", AspectJudge)
def run_aspect_judge(profile: SmallModelProfile | None):
    """The aspect judge on a literal response: one call per gold aspect, with the narrative as details."""
    question = _lampqa_question()
    return AspectJudge()(question=question.question, details=question.narrative,
                         response="Start with pencil sketches of friends from photos.",
                         aspects=question.rubric_aspects)


# Compiled programs that prefcraft ships (compiled/index.json), loaded as the commands load them, on the inputs above.

def _shipped_inferrer(path: Path, profile: SmallModelProfile | None) -> dspy.Prediction:
    return _infer_with(load_inferrer(path)[0])


def _shipped_planpers(path: Path, profile: SmallModelProfile | None) -> dspy.Prediction:
    return _plan_and_answer(load_planpers(path, post_chars=_post_chars(profile))[0])


def _shipped_asker(path: Path, profile: SmallModelProfile | None) -> dspy.Prediction:
    return _ask(load_asker(path, max_turns=2))


def _shipped_persona_prompt(path: Path, profile: SmallModelProfile | None) -> dspy.Prediction:
    return _synthesize(load_persona_synthesizer(path)[0])


SHIPPED_RUNS: dict[str, Callable[[Path, SmallModelProfile | None], object]] = {
    CUPID_PROGRAM: _shipped_inferrer, LAMPQA_PROGRAM: _shipped_planpers, PREFDISCO_PROGRAM: _shipped_asker,
    PERSONA_SYNTHESIZER: _shipped_persona_prompt,
}


def _shipped_index() -> dict[str, list[dict[str, str]]]:
    return json.loads(COMPILED_INDEX.read_text(encoding="utf-8")) if COMPILED_INDEX.is_file() else {}


def _shipped_cases() -> list[Case]:
    """One case per compiled program listed in compiled/index.json whose kind SHIPPED_RUNS knows."""
    return [
        Case("shipped", f"{name}-{entry['model'].rsplit('/', 1)[-1]}", (),
             partial(SHIPPED_RUNS[name], COMPILED_DIR / entry["path"]),
             f"The shipped {name} compiled for {entry['model']} ({entry['path']}), on the uncompiled program's input.")
        for name, entries in _shipped_index().items() if name in SHIPPED_RUNS for entry in entries
    ]


CASES.extend(_shipped_cases())


def render(case: Case, profile_name: str) -> str:
    profile = PROFILES[profile_name]
    adapter = build_adapter(MODEL, profile)
    lm, engine = capturing_lm(MODEL)
    with dspy.context(lm=lm, adapter=adapter):
        case.run(profile)
    described = ("the small-model profile's defaults (SmallModelProfile())" if profile else
                 "paper (no small-model profile: max_tokens alone bounds a reply)")
    header = [
        f"# {case.component}/{case.program}: {', '.join(program.__name__ for program in case.covers)}",
        *(f"# {line}" for line in case.description.splitlines()),
        f"# Profile: {described}",
        f"# Model: {MODEL.model} (temperature {MODEL.temperature}, max_tokens {MODEL.max_tokens}); adapter: "
        f"{type(adapter).__name__}, structured_output {MODEL.dialect}",
        f"# Replies are the capturing fake's (tests/capturing_lm.py). Regenerate: {REGENERATE}",
    ]
    return "\n".join(header) + "\n\n" + render_calls(engine.calls)


def _updating() -> bool:
    return os.environ.get(UPDATE_VARIABLE) == "1"


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("case", CASES, ids=[f"{c.component}/{c.program}" for c in CASES])
def test_prompt_snapshot(case: Case, profile: str) -> None:
    rendered, path = render(case, profile), case.path(profile)
    if _updating():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rendered, encoding="utf-8")
        return
    if not path.is_file():
        pytest.fail(f"{path} is missing: regenerate with {REGENERATE}, then review it", pytrace=False)
    committed = path.read_text(encoding="utf-8")
    if rendered != committed:
        diff = difflib.unified_diff(committed.splitlines(keepends=True), rendered.splitlines(keepends=True),
                                    fromfile=f"{path} (committed)", tofile=f"{path} (rendered now)")
        pytest.fail(f"the prompts changed; review the diff, then regenerate with {REGENERATE}\n{''.join(diff)}",
                    pytrace=False)


def test_every_program_has_a_snapshot() -> None:
    programs = {value for module in PROGRAM_MODULES for value in vars(module).values()
                if inspect.isclass(value) and issubclass(value, dspy.Module) and value.__module__ == module.__name__}
    covered = {program for case in CASES for program in case.covers}
    missing = sorted(program.__qualname__ for program in programs - covered)
    assert not missing, f"programs without a prompt snapshot case in {Path(__file__).name}: {', '.join(missing)}"


def test_every_shipped_program_has_a_snapshot() -> None:
    unknown = sorted(set(_shipped_index()) - set(SHIPPED_RUNS))
    assert not unknown, f"shipped compiled programs with no run in SHIPPED_RUNS: {', '.join(unknown)}"


def test_no_stale_snapshot_files() -> None:
    expected = {case.path(profile) for case in CASES for profile in PROFILES}
    stale = sorted(path for path in SNAPSHOTS.rglob("*.txt") if path not in expected)
    if _updating():
        for path in stale:
            path.unlink()
        return
    assert not stale, f"snapshot files no case renders: {', '.join(map(str, stale))}; regenerate with {REGENERATE}"

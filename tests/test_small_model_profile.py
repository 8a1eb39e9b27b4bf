"""The small-model profile is the only source of length bounds: signatures and programs carry none that only a tiny
model needs, every per-field bound declared beside a signature or given in a settings file names a real field, and with
the profile on each field gets its bound again, whatever copy of its signature DSPy makes."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import dspy
import pydantic
import pytest

import prefcraft.signatures
from prefcraft.components.synthesizeme.options import FitOptions
from prefcraft.engine import small_model
from prefcraft.engine.adapter import LengthBounds, output_schema
from prefcraft.engine.lm import build_adapter
from prefcraft.engine.small_model import declared, small_model_bounds
from prefcraft.errors import ConfigError
from prefcraft.experiments.files import load_experiment
from prefcraft.settings import ModelSettings, SmallModelProfile

ROOT = Path(__file__).parents[1]
MODULES = [importlib.import_module(f"prefcraft.signatures.{info.name}")
           for info in pkgutil.iter_modules(prefcraft.signatures.__path__)]
SIGNATURES = {cls.__name__: cls for module in MODULES for cls in vars(module).values()
              if inspect.isclass(cls) and issubclass(cls, dspy.Signature) and cls.__module__ == module.__name__}
MODELS = {cls.__name__: cls for module in MODULES for cls in vars(module).values()
          if inspect.isclass(cls) and issubclass(cls, pydantic.BaseModel) and not issubclass(cls, dspy.Signature)
          and cls.__module__ == module.__name__}
# Structural bounds that the papers define: CUPID's checklists have at most 4 items, one coverage label each.
PAPER_LIST_BOUNDS = {"DecomposePreference.checklist": 4, "MatchChecklist.coverage": 4}
TINY_MODEL_WORDING = re.compile(r"\b(short|shortly|brief|briefly|characters?)\b|one to three short", re.IGNORECASE)


def length_bounds(schema: dict[str, Any], field: str = "") -> list[tuple[str, str, int]]:
    """(top-level field, keyword, value) for every maxLength, maxItems and maxProperties in the schema."""
    found = [(field, keyword, schema[keyword]) for keyword in ("maxLength", "maxItems", "maxProperties")
             if keyword in schema]
    children = [*schema.get("properties", {}).items()] if not field else [
        (field, child) for child in (*schema.get("properties", {}).values(), *schema.get("anyOf", []))]
    if "items" in schema:
        children.append((field, schema["items"]))
    for name, child in children:
        found += length_bounds(child, name)
    return found


def test_the_signatures_are_found():
    assert {"AnswerProblem", "InferPreference", "PlanAspects", "ExtractPreference"} <= set(SIGNATURES)
    assert {"PlannedAspect"} <= set(MODELS)


def test_the_bound_finder_sees_nested_bounds():
    found = length_bounds(output_schema(SIGNATURES["PlanAspects"], LengthBounds(50, 3)))
    assert ("aspects", "maxItems", 3) in found and ("aspects", "maxLength", 50) in found


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_a_signature_bounds_no_output_length_but_the_papers(name):
    bounds = length_bounds(output_schema(SIGNATURES[name]))
    assert [(f"{name}.{field}", value) for field, _, value in bounds] == [
        (key, value) for key, value in PAPER_LIST_BOUNDS.items() if key.startswith(f"{name}.")]


@pytest.mark.parametrize("path", sorted([*ROOT.glob("signatures/*.py"), *ROOT.glob("programs/*.py")]),
                         ids=lambda path: f"{path.parent.name}/{path.name}")
def test_no_length_constant_or_tiny_model_wording_in_signatures_and_programs(path):
    tree = ast.parse(path.read_text())
    constants = [target.id for node in tree.body if isinstance(node, ast.Assign) for target in node.targets
                 if isinstance(target, ast.Name) and re.search(r"CHARS|LENGTH|WORDS", target.id)]
    assert constants == []
    texts = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    assert [text for text in texts if TINY_MODEL_WORDING.search(text)] == []


def test_the_tiny_model_wording_check_can_fail():
    assert TINY_MODEL_WORDING.search("Answer in one to three short paragraphs.")
    assert TINY_MODEL_WORDING.search("Answer the user's request helpfully and briefly.")
    assert not TINY_MODEL_WORDING.search("one sentence of at most 30 words")


def profile_file_keys() -> list[str]:
    """The per-field bounds that the repository's settings, experiment and benchmark profile files give."""
    keys = []
    for path in sorted([*ROOT.glob("experiments/*.toml"), *ROOT.glob("benchmarks/profiles/*.toml")]):
        table = tomllib.loads(path.read_text())
        profile = table.get("settings", table).get("small_model", {})
        keys += [key for kind in ("field_chars", "field_items") for key in profile.get(kind, {})]
    return keys


def test_the_profile_files_give_field_bounds():
    assert "AnswerWithPlan.answer" in profile_file_keys()  # benchmarks/profiles/bounds-2026-11-25.toml


@pytest.mark.parametrize("key", sorted({*declared("field_chars"), *declared("field_items"), *profile_file_keys()}))
def test_every_bound_of_the_profile_names_a_declared_field(key):
    owner, field = key.split(".")
    if owner in SIGNATURES:
        assert field in SIGNATURES[owner].output_fields
    else:
        assert field in MODELS[owner].model_fields


# (signature, field, keyword, the profile's value): what the signatures held before the profile took their bounds.
PROFILE_BOUNDS = [
    ("SelectRelevantSessions", "relevant_sessions", "maxItems", 3),
    ("InferPreference", "preference", "maxLength", 200),
    ("SummarizeSession", "preference", "maxLength", 200),
    ("GenerateResponse", "response", "maxLength", 700),
    ("AnswerQuestion", "answer", "maxLength", 600),
    ("AnswerWithPlan", "answer", "maxLength", 400),
    ("PlanAspects", "aspects", "maxItems", 4),
    ("NextTurn", "question", "maxLength", 120),
    ("AnswerProblem", "response", "maxLength", 400),
    ("SolveProblem", "response", "maxLength", 400),
    ("AnswerProblem", "final_answer", "maxLength", 40),
    ("ReplyAsUser", "reply", "maxLength", 120),
    ("ExtractPreference", "preference", "maxLength", 400),  # no bound of its own: the profile's default
    ("ExtractInsights", "insights", "maxLength", 400),
]


def profile_schema(signature: type[dspy.Signature]) -> dict[str, Any]:
    return output_schema(signature, build_adapter(ModelSettings(), SmallModelProfile()).bounds)


@pytest.mark.parametrize(("name", "field", "keyword", "value"), PROFILE_BOUNDS)
def test_the_profile_gives_each_field_its_bound(name, field, keyword, value):
    assert profile_schema(SIGNATURES[name])["properties"][field][keyword] == value


@pytest.mark.parametrize(("name", "field", "keyword", "value"), PROFILE_BOUNDS)
def test_the_profile_bounds_a_compiled_copy_of_a_signature_alike(name, field, keyword, value):
    signature = SIGNATURES[name]
    compiled = signature.load_state({**dspy.Predict(signature).dump_state()["signature"], "instructions": "Compiled."})
    assert profile_schema(compiled)["properties"][field][keyword] == value


def test_the_profile_bounds_nested_fields_and_checklist_items():
    aspect = profile_schema(SIGNATURES["PlanAspects"])["properties"]["aspects"]["items"]["properties"]
    assert (aspect["title"]["maxLength"], aspect["reason"]["maxLength"]) == (60, 60)
    checklist = profile_schema(SIGNATURES["DecomposePreference"])["properties"]["checklist"]
    assert checklist == {"type": "array", "maxItems": 4, "items": {"type": "string", "maxLength": 120}}


def test_the_profile_bounds_a_chain_of_thought_reasoning_by_its_default():
    judge = dspy.ChainOfThought(SIGNATURES["JudgePreference"]).predict.signature
    assert profile_schema(judge)["properties"]["reasoning"]["maxLength"] == 400


def test_without_the_profile_the_adapter_bounds_no_length():
    assert build_adapter(ModelSettings(), None).bounds == LengthBounds()


EXPERIMENT_FILES = sorted(path for path in ROOT.glob("experiments/*.toml")
                          if path.name not in ("embedded.toml", "vllm-qwen7b.toml"))  # settings files: test_settings.py


@pytest.mark.parametrize("path", EXPERIMENT_FILES, ids=lambda path: path.name)
def test_the_small_experiments_turn_the_profile_on_and_the_papers_turn_it_off(path):
    experiment = load_experiment(path)
    assert experiment.settings.small_model.enabled is path.stem.endswith("-small")


@pytest.mark.parametrize("path", sorted(ROOT.glob("experiments/synthesizeme-*.toml")), ids=lambda path: path.name)
def test_the_profile_caps_synthesizeme_demos_in_the_small_experiments_only(path):
    experiment = load_experiment(path)
    fit = FitOptions.model_validate(experiment.steps["fit"])
    expected = SmallModelProfile().max_demos if path.stem.endswith("-small") else None
    assert fit.search_config(experiment.settings).max_demos == expected


# The per-field bounds as prefcraft/settings.py held them before each moved beside its signature: with no entry of the
# user's, the profile bounds each field exactly so.
FIELD_CHARS_BEFORE_THE_MOVE = {
    "SummarizeSession.analysis": 300,
    "SummarizeSession.context": 200,
    "SummarizeSession.preference": 200,
    "InferPreference.analysis": 300,
    "InferPreference.preference": 200,
    "DecomposePreference.analysis": 300,
    "DecomposePreference.checklist": 120,
    "MatchChecklist.reasoning": 200,
    "JudgeResponse.evaluation": 300,
    "JudgeResponseFigure16.evaluation": 300,  # added after the move: Figure 16's judge
    "GenerateResponse.response": 700,
    "AnswerQuestion.answer": 600,
    "AnswerWithProfile.answer": 600,
    "AnswerWithPlan.answer": 400,
    "PlannedAspect.title": 60,
    "PlannedAspect.reason": 60,
    "NextTurn.question": 120,
    "NextQuestion.question": 120,  # added after the move: the fixed question count's asker
    "AnswerProblem.response": 400,
    "AnswerProblem.final_answer": 40,
    "AnswerInDialogue.response": 400,
    "AnswerInDialogue.final_answer": 40,
    "SolveProblem.response": 400,
    "SolveProblem.final_answer": 40,
    "ReplyAsUser.thought": 120,
    "ReplyAsUser.reply": 120,
    "GradeCriterion.justification": 300,
    "JudgeCorrectness.justification": 200,
}
FIELD_ITEMS_BEFORE_THE_MOVE = {"SelectRelevantSessions.relevant_sessions": 3, "PlanAspects.aspects": 4}


def test_the_default_field_bounds_are_the_table_before_the_move():
    bounds = build_adapter(ModelSettings(), SmallModelProfile()).bounds
    assert dict(bounds.field_chars) == FIELD_CHARS_BEFORE_THE_MOVE
    assert dict(bounds.field_items) == FIELD_ITEMS_BEFORE_THE_MOVE


def test_each_component_declares_its_bounds_beside_its_signatures():
    owners = [key.split(".")[0] for key in [*declared("field_chars"), *declared("field_items")]]
    modules = Counter((SIGNATURES | MODELS)[owner].__module__ for owner in owners)
    assert modules == {"prefcraft.signatures.cupid": 12, "prefcraft.signatures.prefdisco": 12,
                       "prefcraft.signatures.lampqa": 6}


@pytest.fixture
def registry(monkeypatch):
    """The declared bounds, restored after the test."""
    saved = {kind: dict(bounds) for kind, bounds in small_model._DECLARED.items()}
    monkeypatch.setattr(small_model, "_DECLARED", saved)


class Outline(pydantic.BaseModel):
    heading: str
    points: list[str]


class WriteOutline(dspy.Signature):
    """Outline an answer."""

    question: str = dspy.InputField()
    outline: Outline = dspy.OutputField()
    notes: str = dspy.OutputField()


def test_a_declaration_naming_a_missing_field_fails_with_the_fields_it_may_name(registry):
    with pytest.raises(ValueError, match=r"small-model bound WriteOutline\.note: WriteOutline \(.*\) has no field "
                       r"'note'; name one of its output fields: notes, outline, reasoning"):
        small_model_bounds(WriteOutline, chars={"notes": 100, "note": 100})
    with pytest.raises(ValueError, match=r"WriteOutline \(.*\) has no field 'question'"):  # an input field, unbounded
        small_model_bounds(WriteOutline, chars={"question": 100})
    with pytest.raises(ValueError, match=r"bound Outline\.point: .* name one of its fields: heading, points"):
        small_model_bounds(Outline, items={"point": 3})
    assert "WriteOutline.notes" not in declared("field_chars")  # nothing of a refused declaration is kept


@pytest.mark.parametrize("bound", [0, -1, 2.5, True, "100"])
def test_a_declared_bound_is_a_positive_whole_number(registry, bound):
    with pytest.raises(ValueError, match=r"small-model bound WriteOutline\.notes: .* is not a positive whole number"):
        small_model_bounds(WriteOutline, chars={"notes": bound})


def test_a_declaration_belongs_to_a_signature_or_a_model(registry):
    with pytest.raises(TypeError, match=r"belong to a dspy\.Signature or a pydantic model"):
        small_model_bounds(dict, chars={"notes": 100})


def test_a_field_declared_twice_with_two_bounds_is_refused(registry):
    small_model_bounds(WriteOutline, chars={"notes": 100})
    small_model_bounds(WriteOutline, chars={"notes": 100})  # a module imported again declares the same
    with pytest.raises(ValueError, match=r"WriteOutline\.notes \(field_chars\) is declared twice, as 100 and as 90"):
        small_model_bounds(WriteOutline, chars={"notes": 90})


def test_the_profile_applies_a_declaration_made_after_the_adapter_was_built(registry):
    adapter = build_adapter(ModelSettings(), SmallModelProfile(field_chars={"Outline.heading": 20}))
    small_model_bounds(WriteOutline, chars={"notes": 100}, items={"outline": 3})
    small_model_bounds(Outline, chars={"heading": 50, "points": 30})
    fields = output_schema(WriteOutline, adapter.bounds)["properties"]
    assert fields["notes"]["maxLength"] == 100
    outline = fields["outline"]["properties"]
    assert outline["heading"]["maxLength"] == 20  # the profile's entry replaces the declared bound
    assert outline["points"] == {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 30}}
    assert output_schema(WriteOutline, LengthBounds()) == output_schema(WriteOutline)  # the profile off: no bound


def test_the_profiles_entries_are_added_to_the_declared_bounds_or_replace_them():
    profile = SmallModelProfile(field_chars={"AnswerProblem.response": 300, "JudgePreference.reasoning": 200},
                                field_items={"PlanAspects.aspects": 2})
    bounds = build_adapter(ModelSettings(), profile).bounds
    assert dict(bounds.field_chars) == {**FIELD_CHARS_BEFORE_THE_MOVE, "AnswerProblem.response": 300,
                                        "JudgePreference.reasoning": 200}
    assert dict(bounds.field_items) == {**FIELD_ITEMS_BEFORE_THE_MOVE, "PlanAspects.aspects": 2}
    assert output_schema(SIGNATURES["AnswerProblem"], bounds)["properties"]["response"]["maxLength"] == 300
    judge = dspy.ChainOfThought(SIGNATURES["JudgePreference"]).predict.signature
    assert output_schema(judge, bounds)["properties"]["reasoning"]["maxLength"] == 200
    assert profile.field_chars == {"AnswerProblem.response": 300, "JudgePreference.reasoning": 200}  # as given


@pytest.mark.parametrize(("kind", "key", "fields"), [
    ("field_chars", "AnswerProblem.respons", "final_answer, reasoning, response"),
    ("field_items", "PlannedAspect.titles", "reason, title"),
])
def test_the_adapter_refuses_a_profile_entry_naming_no_field_of_its_owner(kind, key, fields):
    profile = SmallModelProfile.model_validate({kind: {key: 10}})
    owner, field = key.split(".")
    with pytest.raises(ConfigError, match=rf"small_model\.{kind} names {key}, but {owner} has no field '{field}'\n"
                       rf"  hint: name one of its fields \({fields}\), keyed {owner}\.FIELD"):
        build_adapter(ModelSettings(), profile)


def test_a_profile_entry_whose_owner_is_not_imported_yet_waits_for_it():
    profile = SmallModelProfile(field_chars={"NotImportedYet.answer": 10})
    assert build_adapter(ModelSettings(), profile).bounds.field_chars["NotImportedYet.answer"] == 10

"""The small-model profile is the only source of length bounds: signatures and programs carry none that only a tiny
model needs, every bound of the profile names a real field, and with the profile on each field gets its bound again,
whatever copy of its signature DSPy makes."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path
from typing import Any

import dspy
import pydantic
import pytest

import prefcraft.signatures
from prefcraft.adapter import LengthBounds, output_schema
from prefcraft.components.synthesizeme.commands import FitOptions
from prefcraft.experiments import load_experiment
from prefcraft.lm import build_adapter
from prefcraft.settings import SMALL_MODEL_FIELD_CHARS, SMALL_MODEL_FIELD_ITEMS, ModelSettings, SmallModelProfile

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


@pytest.mark.parametrize("key", sorted({*SMALL_MODEL_FIELD_CHARS, *SMALL_MODEL_FIELD_ITEMS}))
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

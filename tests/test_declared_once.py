"""Every choice is declared once: a step option or optimizer setting with a fixed set of choices names the `Literal`
alias declared where the choice is used (optimizers/ for an optimizer's setting, programs/ for a program's), and no
other alias or inline `Literal` spells the same choices again. And a component builds no predictor of its own: every
`dspy.Predict` and `dspy.ChainOfThought` sits behind a program in programs/.

The choices in play are read from the models themselves (every step's options, every optimizer config); where each set
of choices is declared is read from the source, since `typing` caches `Literal[...]`: two declarations of the same
choices are one object at run time.
"""

import ast
import dataclasses
import functools
import importlib
import typing
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from test_import_graph import module_files, source_folders

from prefcraft.registry import COMPONENTS

ROOT = Path(__file__).resolve().parent.parent
Choices = frozenset[object]
SAME_VALUES_OTHER_IDEA = {
    frozenset({"Verification", "ValidationOrders"}):
        "SynthesizeMe's step-1 rule for which train pairs count as verified (optimizers/synthesizeme.py) and the "
        "orders the fit's validation pairs are scored in (components/synthesizeme/judge_sets.py): two independent "
        "settings of two different sets of pairs, which a fit combines either way",
}
"""Aliases that declare the same choices for different ideas, with the reason each may stay apart."""
PREDICTORS = {"Predict", "ChainOfThought"}


class Declaration(NamedTuple):
    where: str
    alias: str | None
    """The alias's name, or None for a `Literal[...]` written inline."""


def _literal_choices(node: ast.Subscript) -> Choices | None:
    """The choices of a `Literal[...]` written with constants alone; None for one built from names or calls."""
    elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if not all(isinstance(element, ast.Constant) for element in elements):
        return None
    return frozenset(element.value for element in elements)


def _is_literal(node: ast.AST) -> bool:
    target = node.value if isinstance(node, ast.Subscript) else None
    return (isinstance(target, ast.Name) and target.id == "Literal") or (
        isinstance(target, ast.Attribute) and target.attr == "Literal")


def declarations(source: str, where: str) -> Iterator[tuple[Choices, Declaration]]:
    """Every constant `Literal[...]` of a module: an alias (`Name = Literal[...]` at module level) or inline."""
    tree = ast.parse(source)
    targets = {id(statement.value): statement.targets if isinstance(statement, ast.Assign) else [statement.target]
               for statement in tree.body if isinstance(statement, ast.Assign | ast.AnnAssign)}
    aliases = {value: names[0].id for value, names in targets.items()
               if len(names) == 1 and isinstance(names[0], ast.Name)}
    for node in ast.walk(tree):
        if _is_literal(node) and (choices := _literal_choices(node)) is not None:
            yield choices, Declaration(f"{where}:{node.lineno}", aliases.get(id(node)))


def duplicates(declared: dict[Choices, list[Declaration]], in_play: Iterable[Choices]) -> list[list[Declaration]]:
    """The declarations of each set of choices in play that is declared by two aliases, or by an alias and inline."""
    found = []
    for choices in in_play:
        sites = declared.get(choices, [])
        aliases = [site.alias for site in sites if site.alias]
        allowed = len(aliases) == len(sites) and frozenset(aliases) in SAME_VALUES_OTHER_IDEA
        if len(sites) > 1 and aliases and not allowed:
            found.append(sites)
    return found


def _choices(annotation: object) -> Iterator[Choices]:
    """The choices of every `Literal` in an annotation, however deep (`list[...]`, `X | None`, `Annotated[...]`)."""
    if typing.get_origin(annotation) is typing.Literal:
        yield frozenset(typing.get_args(annotation))
        return
    for argument in typing.get_args(annotation):
        yield from _choices(argument)


def _optimizer_configs() -> Iterator[type]:
    for name in module_files({"prefcraft.optimizers": source_folders()["prefcraft.optimizers"]}):
        module = importlib.import_module(name)
        yield from (value for value in vars(module).values()
                    if dataclasses.is_dataclass(value) and isinstance(value, type)
                    and value.__module__ == name and value.__name__.endswith("Config"))


def choices_in_play() -> set[Choices]:
    """The choices of every step's options in every component, and of every optimizer config."""
    annotations = [field.annotation for component in COMPONENTS.values() for step in component.steps.values()
                   for field in step.options.model_fields.values()]
    annotations += [hint for config in _optimizer_configs() for hint in typing.get_type_hints(config).values()]
    return {choices for annotation in annotations for choices in _choices(annotation)}


def declared_in(sources: Iterable[tuple[str, str]]) -> dict[Choices, list[Declaration]]:
    """Each set of choices and its declarations in the (source, where) modules."""
    declared: dict[Choices, list[Declaration]] = defaultdict(list)
    for source, where in sources:
        for choices, declaration in declarations(source, where):
            declared[choices].append(declaration)
    return declared


@functools.cache
def declared_in_tree() -> dict[Choices, list[Declaration]]:
    modules = module_files(source_folders()).values()
    return declared_in((path.read_text(), str(path.relative_to(ROOT))) for path in modules)


def test_every_choice_in_play_is_declared_once():
    in_play = choices_in_play()
    assert frozenset({"exact", "exhaustive", "halving"}) in in_play  # the walk reaches the steps' options
    found = duplicates(declared_in_tree(), in_play)
    listed = [", ".join(f"{site.alias or 'inline'} at {site.where}" for site in sites) for sites in found]
    assert not found, "choices declared more than once (name one alias, declared where it is used):\n" + "\n".join(
        listed)


def test_no_two_choices_share_an_alias_name():
    aliases = defaultdict(list)
    for sites in declared_in_tree().values():
        for site in sites:
            if site.alias:
                aliases[site.alias].append(site.where)
    shared = {name: where for name, where in aliases.items() if len(where) > 1}
    assert not shared, f"one name for different choices: {shared}"


def test_a_repeated_choice_is_found():
    source = 'Mode = Literal["fast", "slow"]\nclass A:\n    mode: Literal["slow", "fast"] = "fast"\n'
    declared = declared_in([(source, "a.py")])
    assert duplicates(declared, [frozenset({"fast", "slow"})]) == [
        [Declaration("a.py:1", "Mode"), Declaration("a.py:3", None)]]
    assert duplicates(declared, [frozenset({"fast"})]) == []


def predictors_built(path: Path) -> Iterator[str]:
    """Each `Predict(...)` or `ChainOfThought(...)` call in a module, as `path:line: name`."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name in PREDICTORS:
                yield f"{path.relative_to(ROOT)}:{node.lineno}: {name}"


def test_components_build_no_predictor_of_their_own():
    assert any(predictors_built(ROOT / "programs" / "cupid.py"))  # where they belong, and found there
    built = [found for path in sorted((ROOT / "prefcraft" / "components").rglob("*.py"))
             for found in predictors_built(path)]
    assert not built, "a component's predictor belongs behind a program in programs/<component>.py:\n" + "\n".join(
        built)

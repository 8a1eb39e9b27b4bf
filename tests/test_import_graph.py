"""No import cycles among prefcraft's modules, and imports run one way through the layers (ARCHITECTURE.md): the core's
shared machinery <- signatures <- programs <- optimizers <- components <- command line, runner and API. Top-level,
function-level and `TYPE_CHECKING` imports all count.

Each source folder is read as pyproject.toml installs it (signatures/ as prefcraft.signatures, ...). An import of a
submodule is an edge to that submodule only, not to the packages above it, so a package's `__init__` importing its own
submodules is a cycle only when a submodule imports the package back.
"""

import ast
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
Graph = Mapping[str, set[str]]
LAYERS = ("core", "prefcraft.signatures", "prefcraft.programs", "prefcraft.optimizers", "prefcraft.components", "top")
TOP = ("prefcraft", "prefcraft.api", "prefcraft.flags", "prefcraft.registry", "prefcraft.runner",
       "prefcraft.served_program")
"""The runner, the API, the flags and the served program: modules that read the component registry."""
TOP_PACKAGES = ("prefcraft.commands", "prefcraft.html_report", "prefcraft.experiments")
"""The command line, the HTML report, and experiment files with their sweeps and rehearsals, each with all its
modules. The report's building blocks
(`prefcraft.report_parts`) are the core's: components draw with them."""


def source_folders() -> dict[str, Path]:
    """Package name -> folder, for prefcraft and every package pyproject.toml maps to a folder of its own."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {"prefcraft": ROOT / "prefcraft", **{package: ROOT / folder
                                                 for package, folder in setuptools["package-dir"].items()}}


def module_files(folders: Mapping[str, Path]) -> dict[str, Path]:
    modules = {}
    for package, folder in folders.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join((package, *parts))] = path
    return modules


def import_graph(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of `modules` it imports anywhere in its file."""
    return {name: set(_imported(name, path, modules)) for name, path in modules.items()}


def _imported(module: str, path: Path, modules: Mapping[str, Path]) -> Iterator[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            source = ".".join(part for part in (base, node.module) if part)
            for alias in node.names:
                if f"{source}.{alias.name}" in modules:
                    yield f"{source}.{alias.name}"
                elif source in modules:
                    yield source


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (or of one that imports itself), sorted (Tarjan)."""
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = lowlink[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                lowlink[node] = min(lowlink[node], lowlink[target])
            elif target in on_stack:
                lowlink[node] = min(lowlink[node], index[target])
        if lowlink[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def layer(module: str) -> int:
    """The module's place in LAYERS: the top's (TOP, TOP_PACKAGES), a pipeline folder's, else the core's."""
    if module in TOP or any(module == top or module.startswith(f"{top}.") for top in TOP_PACKAGES):
        return LAYERS.index("top")
    return next((index for index, package in enumerate(LAYERS)
                 if module == package or module.startswith(f"{package}.")), 0)


def upward_imports(graph: Graph) -> list[str]:
    """Every import of a module from a higher layer, as `module (layer) -> imported (layer)`."""
    return [f"{module} ({LAYERS[layer(module)]}) -> {target} ({LAYERS[layer(target)]})"
            for module in sorted(graph) for target in sorted(graph[module]) if layer(target) > layer(module)]


def describe(component: list[str], graph: Graph) -> str:
    members = set(component)
    edges = [f"    {module} -> {target}" for module in component for target in sorted(graph[module] & members)]
    return "\n".join([f"  {len(component)} modules:", *edges])


def test_no_module_imports_itself_back():
    graph = import_graph(module_files(source_folders()))
    assert "prefcraft.signatures.cupid" in graph and "prefcraft.components.cupid.evaluation" in graph
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(describe(component, graph) for component in found)


def test_layers_import_only_from_below():
    graph = import_graph(module_files(source_folders()))
    assert {layer(module) for module in graph} == set(range(len(LAYERS)))
    assert not upward_imports(graph), "imports from a higher layer:\n" + "\n".join(upward_imports(graph))


def test_each_module_has_its_layer():
    assert [layer(module) for module in ("prefcraft.settings", "prefcraft.metrics.stats", "prefcraft.signatures.cupid",
                                          "prefcraft.programs.judge", "prefcraft.optimizers.compile_gate",
                                          "prefcraft.components.cupid.metrics", "prefcraft.components.component",
                                          "prefcraft", "prefcraft.commands.tour", "prefcraft.html_report.page",
                                          "prefcraft.report_parts.blocks", "prefcraft.commands.main")] == [
        0, 0, 1, 2, 3, 4, 4, 5, 5, 5, 0, 5]
    assert upward_imports({"prefcraft.programs.cupid": {"prefcraft.components.cupid.metrics", "prefcraft.engine.lm"},
                           "prefcraft.engine.lm": set()}) == [
        "prefcraft.programs.cupid (prefcraft.programs) -> prefcraft.components.cupid.metrics (prefcraft.components)"]


def test_a_cycle_through_a_function_level_import_or_a_package_is_found(tmp_path):
    files = {
        "pkg/__init__.py": "from pkg import runner\n",
        "pkg/runner.py": "from pkg.results import Outcome\n\ndef run():\n    from pkg import report\n",
        "pkg/report.py": "from .runner import run\n",
        "pkg/results.py": "import json\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/leaf.py": "from .. import results\nfrom . import leaf\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = import_graph(module_files({"pkg": tmp_path / "pkg"}))
    assert graph["pkg.runner"] == {"pkg.results", "pkg.report"}
    assert graph["pkg.report"] == {"pkg.runner"}
    assert graph["pkg.sub.leaf"] == {"pkg.results", "pkg.sub.leaf"}
    assert cycles(graph) == [["pkg.report", "pkg.runner"], ["pkg.sub.leaf"]]


def test_a_components_lazy_imports_are_its_imports():
    graph = import_graph(module_files(source_folders()))
    assert {"prefcraft.components.cupid.evaluation", "prefcraft.components.cupid.options",
            "prefcraft.optimizers.cupid"} <= graph["prefcraft.components.cupid.commands"]


def test_a_package_importing_its_own_submodules_is_no_cycle():
    assert cycles({"pkg": {"pkg.a", "pkg.b"}, "pkg.a": {"pkg.b"}, "pkg.b": set()}) == []
    assert cycles({"pkg": {"pkg.a"}, "pkg.a": {"pkg"}}) == [["pkg", "pkg.a"]]

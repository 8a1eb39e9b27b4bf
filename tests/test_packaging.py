"""The wheel a user installs holds every registered component, its sample data, the pipeline's folders and the compiled
programs, and nothing else from the repository: built by pip from a copy of the source tree, opened with zipfile.

The copy is the tree git sees (tracked files and untracked ones it does not ignore), so the build leaves nothing in the
working tree and a file that git ignores cannot make the test pass.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

import pytest

from prefcraft.registry import COMPONENTS

ROOT = Path(__file__).resolve().parent.parent
# Installed package -> its folder in the repository, as pyproject.toml maps them (prefcraft.programs -> programs).
PACKAGE_DIR: dict[str, str] = {
    "prefcraft": "prefcraft",
    **tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"],
}


def source_files() -> list[str]:
    """The repository's files as git sees them, POSIX paths relative to the root."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    return sorted(path for path in listed if path and (ROOT / path).is_file())  # a file deleted but not yet staged


def copy_tree(files: Iterable[str], target: Path) -> None:
    for path in files:
        (target / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, target / path, follow_symlinks=False)


def build_wheel(source: Path, out: Path) -> set[str]:
    """pip's wheel of `source`, as a user's `pip install` builds it; the names of the files it holds. Offline, with this
    interpreter's setuptools (the test extra's, which writes wheels itself)."""
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--disable-pip-version-check",
               "--no-input", "--wheel-dir", str(out), str(source)]
    done = subprocess.run(command, cwd=source, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}"
    (wheel,) = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return {name for name in archive.namelist() if not name.endswith("/")}


def installed_path(path: str) -> str | None:
    """Where a repository file lands in the wheel if it is in a package folder (compiled/index.json ->
    prefcraft/compiled/index.json), or None."""
    for package, folder in PACKAGE_DIR.items():
        if PurePosixPath(path).is_relative_to(folder):
            return str(PurePosixPath(*package.split("."), PurePosixPath(path).relative_to(folder)))
    return None


def expected_files(files: Iterable[str]) -> dict[str, str]:
    """Repository file -> wheel path, for what must ship: every module of prefcraft/ and of the mapped folders, every
    component's sample data, every compiled JSON."""
    expected = {}
    for path in files:
        parts = PurePosixPath(path).parts
        shipped = (path.endswith(".py")
                   or (parts[:2] == ("prefcraft", "components") and len(parts) > 4 and parts[3] == "sample")
                   or (parts[0] == PACKAGE_DIR["prefcraft.compiled"] and path.endswith(".json")))
        if shipped and (target := installed_path(path)) is not None:
            expected[path] = target
    return expected


@pytest.fixture(scope="module")
def tree() -> list[str]:
    return source_files()


@pytest.fixture(scope="module")
def wheel(tree: list[str], tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    source = tmp_path_factory.mktemp("source")
    copy_tree(tree, source)
    return build_wheel(source, tmp_path_factory.mktemp("wheel"))


def test_every_registered_component_ships_with_its_sample_data(wheel: set[str], tree: list[str]) -> None:
    assert COMPONENTS, "the registry names no component"
    for name in COMPONENTS:
        package = f"prefcraft/components/{name}"
        assert {f"{package}/__init__.py", f"{package}/commands.py"} <= wheel, f"component {name!r} is not in the wheel"
        sample = [path for path in tree if path.startswith(f"{package}/sample/")]
        assert not set(sample) - wheel, f"{name}'s sample data missing from the wheel: {sorted(set(sample) - wheel)}"


def test_the_wheel_holds_every_module_and_compiled_program(wheel: set[str], tree: list[str]) -> None:
    expected = expected_files(tree)
    for package in ("signatures", "programs", "optimizers", "compiled"):
        assert f"prefcraft/{package}/__init__.py" in wheel
    assert any(path.startswith("prefcraft/programs/") and not path.endswith("__init__.py") for path in wheel)
    assert any(path.startswith("prefcraft/compiled/") and path.endswith(".json") for path in wheel)
    missing = {path: target for path, target in expected.items() if target not in wheel}
    assert not missing, f"repository files missing from the wheel (file -> where it should be): {missing}"


def test_nothing_else_ships(wheel: set[str], tree: list[str]) -> None:
    """No tests, benchmarks, experiments, docs or scripts, and no build litter (__pycache__, .pyc, egg-info)."""
    (dist_info,) = {name.split("/")[0] for name in wheel if name.split("/")[0].endswith(".dist-info")}
    assert {name.split("/")[0] for name in wheel} == {"prefcraft", dist_info}
    from_repository = {target for path in tree if (target := installed_path(path)) is not None}
    unexpected = sorted(name for name in wheel if name.startswith("prefcraft/") and name not in from_repository)
    assert not unexpected, f"files in the wheel that are no repository file of a package folder: {unexpected}"


def test_a_new_component_and_subpackage_ship_without_being_listed(
    tree: list[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The bug this guards against: a package list written by hand, so that a new package shipped none of its files."""
    source = tmp_path_factory.mktemp("source-new-component")
    copy_tree(tree, source)
    added = {
        "prefcraft/components/newcomp/__init__.py": '"""A component added after the package list was written."""\n',
        "prefcraft/components/newcomp/commands.py": "STEPS = {}\n",
        "prefcraft/components/newcomp/sample/data.jsonl": '{"id": 1}\n',
        "prefcraft/components/newcomp/sample/users/alice.jsonl": '{"id": 2}\n',
        "programs/newcomp/__init__.py": "",
        "programs/newcomp/steps.py": "STEP = 1\n",
        "compiled/newcomp/judge.json": "{}\n",
    }
    for path, text in added.items():
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_text(text)
    wheel = build_wheel(source, tmp_path_factory.mktemp("wheel-new-component"))
    missing = sorted(target for path in added if (target := installed_path(path)) not in wheel)
    assert not missing, f"files of a new component and a new subpackage missing from the wheel: {missing}"

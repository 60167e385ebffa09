# Every target creates and uses its own virtualenv in .venv: nothing is installed system-wide.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LINT_PATHS := $(wildcard server tests bench)

.PHONY: demo test lint format bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

## make demo: triage the bundled example incident and print the report
demo: $(STAMP)
	@$(BIN)/hyperpod-nccl triage examples/training-hang/logs; status=$$?; \
	  if [ $$status -gt 1 ]; then exit $$status; fi

# Claude Code's CLI, for the test that registers the server exactly as the README says.
# Optional: without npm (or the registry) the test skips and says why.
CLAUDE_BIN := $(VENV)/claude/node_modules/.bin/claude
$(CLAUDE_BIN):
	-@command -v npm >/dev/null && npm install --silent --no-fund --no-audit --prefix $(VENV)/claude @anthropic-ai/claude-code >/dev/null 2>&1 || true

## make test: lint, then every test (one worker per core; the tests of a file, or of a package that
## shares servers, stay in one worker: see tests/conftest.py)
test: $(STAMP) lint $(CLAUDE_BIN)
	HYPERPOD_NCCL_CLAUDE_BIN=$(if $(wildcard $(CLAUDE_BIN)),$(abspath $(CLAUDE_BIN)),) $(BIN)/pytest -q -n auto --dist loadgroup

lint: $(STAMP)
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)

format: $(STAMP)
	$(BIN)/ruff check --fix $(LINT_PATHS)
	$(BIN)/ruff format $(LINT_PATHS)

## make bench: throughput and peak memory of log triage (CLI and MCP tool) against rg and grep -E,
## triage at 1,024 / 8,192 / 32,768 ranks, Flight Recorder dumps (1,024 ranks x 2,000 entries),
## and the GPU metric checks' wall time
bench: $(STAMP)
	@command -v rg >/dev/null || apt-get install -y -qq ripgrep >/dev/null 2>&1 \
	  || echo "ripgrep not installed and could not be installed (apt-get install ripgrep)"
	$(BIN)/python bench/run.py
	$(BIN)/python bench/scale.py
	$(BIN)/python bench/flight_recorder.py
	$(BIN)/python bench/gpu_metrics.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache bench/out

# ncdynamics: one-command set-up, demo, tests, benchmarks.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export OMP_NUM_THREADS ?= 1
export MPLBACKEND := Agg

.PHONY: venv demo test test-slow test-gpu test-all doctest bench gpu-campaign lint clean claims \
	claims-cpu

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt torch==2.13.0
	$(BIN)/pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/ncdyn demo --out runs/demo --overwrite

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

# The CUDA checks alone (devices, NTK on CUDA); they skip where CUDA is absent.
test-gpu: $(STAMP)
	$(BIN)/python -m pytest -q -m gpu

test-all: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q -m 'slow or not slow'

bench: $(STAMP)
	$(BIN)/pip install -q -c constraints.txt -e '.[bench]'
	$(BIN)/python benchmarks/run_all.py $(BENCH_ARGS)

# The GPU campaign (docs/performance.md, "The GPU campaign"): the CUDA tests, the NTK,
# collapse, LeNet and SDE benchmarks and the gpu-preset runs, stopping before BUDGET seconds,
# with what must come back written into OUT; FROM=DIR resumes from what an earlier call wrote
# there. It needs no venv (a bare device machine cannot build one): without .venv it runs
# $(PYTHON) with src/ on the path. CAMPAIGN_ARGS passes more options (--queue, --skip, ...).
BUDGET ?= 480
DEVICE ?= cuda
CAMPAIGN_PY = $(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON))

gpu-campaign:
	@test -n "$(OUT)" || { echo "make gpu-campaign: give OUT=DIR (the folder that comes back)"; exit 2; }
	PYTHONPATH=src$(if $(PYTHONPATH),:$(PYTHONPATH)) $(CAMPAIGN_PY) benchmarks/gpu_campaign.py \
		--out $(OUT) --budget $(BUDGET) --device $(DEVICE) $(if $(FROM),--from $(FROM)) \
		$(CAMPAIGN_ARGS)

# The >>> examples in docstrings and in docs/*.md.
doctest: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -o addopts="" \
		--doctest-modules src/ncdynamics --doctest-glob='*.md' docs

# The generated claims tables of docs/theories/*.md, from every experiment's smoke run.
claims: $(STAMP)
	$(BIN)/ncdyn claims --smoke --update-docs docs

# The cpu-preset claims tables: every theory experiment's cpu preset over seeds 0, 1, 2 (hours
# on two cores; killed, it resumes where it stopped). ONLY=a.b,c.d limits it to some experiments.
claims-cpu: $(STAMP)
	$(BIN)/ncdyn claims --run cpu --seeds 0,1,2 $(if $(ONLY),--only $(ONLY)) \
		--out runs/claims-cpu --save docs/theories/claims-cpu.json --update-docs docs

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache

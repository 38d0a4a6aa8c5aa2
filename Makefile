# pageweaver_edu — one command to open the series, one to run every check.
#   make lab        set up .venv (CPU) and open the notebook series in JupyterLab
#   make test       set up .venv (CPU) and run ruff, the CI-file lint, pytest and nbval over every
#                   notebook
# Both are idempotent: the virtual environment is rebuilt only when pyproject.toml changes.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.pageweaver-installed
# CPU build of torch; on a machine whose default torch wheel is a CUDA build, point pip at a
# CPU wheel index with TORCH_PIP_ARGS (e.g. TORCH_PIP_ARGS="--index-url <cpu index>").
TORCH_SPEC ?= torch==2.13.0
TORCH_PIP_ARGS ?=
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))

.PHONY: setup lab test lint lint-ci pytest nbval clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q $(TORCH_PIP_ARGS) "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[dev,notebooks]"
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (pageweaver)" >/dev/null
	touch $@

setup: $(STAMP)

lab: setup
	$(VENV)/bin/jupyter lab notebooks/00_overview.ipynb

lint: setup
	$(VENV)/bin/ruff check .

# The CI files (.github/workflows/, .gitlab-ci.yml): each against its format's schema (vendored
# in check-jsonschema, no network), the GitHub workflows also with actionlint (+ shellcheck on
# every run: script). tests/cpu/test_ci_files.py checks that they run the README's commands.
lint-ci: setup
	$(VENV)/bin/check-jsonschema -q --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(VENV)/bin/check-jsonschema -q --builtin-schema vendor.gitlab-ci .gitlab-ci.yml
	PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/actionlint

pytest: setup
	$(VENV)/bin/pytest -q

nbval: setup
	$(VENV)/bin/pytest -q --nbval-lax --nbval-sanitize-with notebooks/nbval_sanitize.cfg \
		-p no:randomly $(NOTEBOOKS)

test: lint lint-ci pytest nbval

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

# ---- GPU ------------------------------------------------------------------------------
# Run on a CUDA box with the system python3 that holds torch (the lent H200's image), not
# the CPU .venv. `make wheelhouse` (on a machine with a registry) fills wheelhouse/ with the
# PyCUDA sdist and cp312 wheels; `make gpu-test` installs from the registry or, offline, from
# wheelhouse/ (builds PyCUDA, ~2 min), then runs pytest (GPU tests included) and nbval with
# PAGEWEAVER_REQUIRE_GPU=1. `make gpu-bench` rewrites benchmarks/results/gpu_regroup_h200.json.
GPU_PYTHON ?= python3
.PHONY: wheelhouse gpu-setup gpu-test gpu-bench
wheelhouse:
	PYTHON=$(PYTHON) tools/fill_wheelhouse.sh wheelhouse
gpu-setup:
	PYTHON=$(GPU_PYTHON) tools/gpu_setup.sh
gpu-test:
	PYTHON=$(GPU_PYTHON) tools/gpu_test.sh
gpu-bench: gpu-setup
	$(GPU_PYTHON) benchmarks/bench_gpu_regroup.py --out benchmarks/results/gpu_regroup_h200.json

# ---- Browser test and Binder ---------------------------------------------------------
# `make test` (through `pytest`) also runs tests/browser: JupyterLab on loopback driven in
# Debian's headless Chromium by Playwright. browser-setup installs Chromium with apt-get when
# it is missing (root, as on CI; tools/install_browser.sh) and Playwright into .venv (never a
# browser download). Screenshots: tests/browser/artifacts/. `make binder-test` builds a fresh
# venv from binder/requirements.txt alone and executes every notebook with it (minutes).
BROWSER_STAMP := $(VENV)/.pageweaver-browser
.PHONY: browser-setup browser-test binder-test
$(BROWSER_STAMP): $(STAMP) tests/browser/requirements.txt tools/install_browser.sh
	tools/install_browser.sh
	$(PY) -m pip install -q -r tests/browser/requirements.txt
	touch $@
browser-setup: $(BROWSER_STAMP)
pytest: browser-setup
browser-test: browser-setup
	$(VENV)/bin/pytest -q -p no:randomly tests/browser
binder-test: setup
	$(VENV)/bin/pytest -q -s -m slow tests/notebooks/test_binder_env.py

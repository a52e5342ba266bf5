# Positional Encodings, Derived — every command a learner, teacher or CI needs.
#   make lab      set up .venv (first time only) and open the course in JupyterLab
#   make test     set up .venv with the test tools, run the unit tests and strict nbval
#   make execute  re-run every lesson and store its outputs (the only way outputs are made)
#   make student  write the student copies (solutions stripped) to notebooks/student/
#   make bench    time every lesson and explorer, check the budgets, write bench/README.md
#   make site     build the course website from the executed lessons into site/_build/html
#   make grade-check  the nbgrader round trip (generate, autograde 3 kinds of submission) on every lesson
#   make fuzz     the property tests with fresh random examples, many more of them (for authors)
#   make lock     re-resolve requirements.lock, the verified environment, with uv (for authors)
#   make binder   rewrite binder/requirements.txt (Binder's environment) from requirements.lock
#   make pretrain re-make the model zoo (course_utils/zoo/) from its recipes (for authors, ~1 h)
#   make evidence re-make the lessons' evidence record (2x rule, seeds 3-5; for authors, ~2 min)

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The Pythons the course supports (requirements.lock resolves for each; tests/test_lock.py).
SUPPORTED_PYTHONS := 3.11 3.12 3.13
PYTHON_VERSION := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
# Every install takes its versions from requirements.lock, the environment whose outputs nbval
# proves; it is redone only when pyproject.toml or the lock changes: their hash names the stamp.
LOCK := requirements.lock
# On Linux the lock pins PyTorch's CPU-only build (torch==X+cpu), which only PyTorch's own index
# serves; name a mirror of it with `make lab TORCH_INDEX=<url>` (`make lock` uses it too).
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
UNAME := $(shell uname -s)
TORCH_PIN := $(shell sed -n "s/^\(torch==[^ ]*\) ; sys_platform == 'linux'$$/\1/p" $(LOCK))
PIP := $(BIN)/python -m pip
# Some machines' pip configuration names local package folders (file://) that hold only a few
# packages; pip then notes, for every other package, that the folder is ignored. Only that note
# is dropped: every other warning and error is shown.
PIP_NOTES := 2> >(grep -v "^WARNING: Location 'file://.*' is ignored: it is neither a file nor a directory\.$$" >&2)
PIP_INSTALL := $(PIP) install --quiet -c $(LOCK)
KEY := $(shell cat pyproject.toml $(LOCK) | $(PYTHON) -c "import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest()[:16])")
STAMP := $(VENV)/.installed-$(KEY)
TEST_STAMP := $(VENV)/.installed-test-$(KEY)
SITE_STAMP := $(VENV)/.installed-site-$(KEY)
LESSONS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=180
# Two workers; loadscope keeps each notebook (and each test module) on one worker, in order.
XDIST := -n 2 --dist loadscope

export OMP_NUM_THREADS ?= 1
export PYTHONHASHSEED := 0
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: lab test test-split test-exact test-lax unit nbval browser execute student bench site grade-check fuzz lock binder pretrain evidence install clean help
.DEFAULT_GOAL := help

help:
	@sed -n '2,13p' Makefile | sed 's/^# *//'

# An unsupported Python stops here with one sentence, before pip can fail in a long traceback.
$(BIN)/python:
	@if [ -z "$(filter $(PYTHON_VERSION),$(SUPPORTED_PYTHONS))" ]; then echo "The course needs Python 3.11, 3.12 or 3.13, but '$(PYTHON)' is $(if $(PYTHON_VERSION),Python $(PYTHON_VERSION),not a Python that runs): install a supported one and run, for example, 'make lab PYTHON=python3.12'."; exit 1; fi
	$(PYTHON) -m venv $(VENV)

# On Linux torch is installed first, alone (--no-deps: its dependencies come with the rest): the
# lock's CPU build from a wheel pip's configuration already points to (find-links; no network),
# else from TORCH_INDEX. The rest then comes from PyPI without PyTorch's index, which pip would
# otherwise ask about every package (and, where it is unreachable, retry for each: 7 s apiece
# measured here). On macOS and Windows the lock's torch is PyPI's ordinary wheel, a CPU build.
$(STAMP): pyproject.toml $(LOCK) | $(BIN)/python
ifeq ($(UNAME),Linux)
	@test -n "$(TORCH_PIN)" || { echo "$(LOCK) has no torch pin for Linux: run 'make lock'"; exit 1; }
	$(PIP) install --quiet --no-deps --no-index $(TORCH_PIN) 2> /dev/null \
		|| $(PIP) install --quiet --no-deps --index-url $(TORCH_INDEX) $(TORCH_PIN)
endif
	$(PIP_INSTALL) -e '.[lab]' $(PIP_NOTES)
	$(BIN)/python -c "import matplotlib.pyplot"  # builds matplotlib's font cache now, not in a lesson
	rm -f $(VENV)/.installed-* && touch $@

$(TEST_STAMP): $(STAMP)
	$(PIP_INSTALL) -e '.[lab,test,browser,site,grade]' $(PIP_NOTES)
	touch $@

$(SITE_STAMP): $(STAMP)
	$(PIP_INSTALL) -e '.[lab,site]' $(PIP_NOTES)
	touch $@

install: $(STAMP)

# JupyterLab refuses to run as root unless told to (containers, some cloud machines).
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

lab: $(STAMP)
	$(BIN)/jupyter lab $(ROOT_FLAG) notebooks/00_start_here.ipynb

# tests/test_browser.py needs Debian's chromium; without it the test is skipped, and said so twice.
NO_BROWSER_NOTE := command -v chromium > /dev/null || echo "NOTE: chromium is not installed, so the real-browser test (tests/test_browser.py) will be SKIPPED; install it with: sudo apt-get install chromium"

# Stored outputs reproduce bit for bit on x86-64 CPUs with AVX2 whose numerics fingerprint equals
# the lines the lesson recorded (tools/execute.py records them in the notebook's metadata;
# tools/fingerprint.py; course_utils/session.py pins the kernels, course_utils/reproducible.py
# makes the float32 arithmetic the same on Intel and AMD; the float64 line, recorded only by
# lessons that fit a probe, differs by vendor, README). Those lessons are checked twice under strict nbval: with one OpenMP
# thread (the pinned set-up) and with two, so no stored number depends on how many threads the math
# libraries use. The other lessons (all of them on arm64: Apple silicon, Linux on ARM) run in lax
# mode (every cell runs without error), `make test` says so in one line, and every other test runs,
# the claims tests included, which check the lessons' numbers with tolerances.
# `make test-exact` and `make test-lax` check every lesson one way.
NBVAL_LAX := --nbval-lax --nbval-current-env --nbval-cell-timeout=180
test: $(TEST_STAMP)
	@$(NO_BROWSER_NOTE)
	@$(MAKE) --no-print-directory test-split STRICT="$$($(BIN)/python -m tools.fingerprint --strict $(LESSONS))"

# STRICT: the lessons this CPU reproduces bit for bit (from `make test`); the rest run lax.
LAX = $(filter-out $(STRICT),$(LESSONS))
test-split: $(TEST_STAMP)
	$(BIN)/python -m pytest tests $(STRICT) $(NBVAL) $(XDIST) --durations=30
	$(if $(strip $(LAX)),$(BIN)/python -m pytest $(LAX) $(NBVAL_LAX) $(XDIST))
	$(if $(strip $(STRICT)),OMP_NUM_THREADS=2 $(BIN)/python -m pytest $(STRICT) $(NBVAL) $(XDIST))

test-exact: $(TEST_STAMP)
	$(BIN)/python -m pytest tests $(LESSONS) $(NBVAL) $(XDIST)
	OMP_NUM_THREADS=2 $(BIN)/python -m pytest $(LESSONS) $(NBVAL) $(XDIST)

test-lax: $(TEST_STAMP)
	$(BIN)/python -m pytest tests $(LESSONS) $(NBVAL_LAX) $(XDIST)

browser: $(TEST_STAMP)
	@$(NO_BROWSER_NOTE)
	$(BIN)/python -m pytest tests/test_browser.py -v -rs

unit: $(TEST_STAMP)
	$(BIN)/python -m pytest tests $(XDIST)

nbval: $(TEST_STAMP)
	$(BIN)/python -m pytest $(LESSONS) $(NBVAL) $(XDIST)

execute: $(STAMP)
	$(BIN)/python -m tools.execute $(LESSONS)
	$(BIN)/python -m tools.student
	$(BIN)/python -m tools.teachers_guide

student: $(STAMP)
	$(BIN)/python -m tools.student
	$(BIN)/python -m tools.teachers_guide

# The real nbgrader on every lesson (CI autogrades lessons 01 and 09 inside `make test`).
grade-check: $(TEST_STAMP)
	COURSE_GRADE_ALL=1 $(BIN)/python -m pytest tests/test_grading.py -n 2 --dist load -v

# Every test file that uses Hypothesis, with a fresh random seed and ten times the examples (the
# `fuzz` profile and `examples` in tests/conftest.py); a failure prints the seed that re-runs it.
FUZZ_TESTS = $(shell grep -l "^from hypothesis import" tests/test_*.py)
ifndef FUZZ_SEED
FUZZ_SEED := $(shell od -An -N4 -tu4 /dev/urandom | tr -d ' ')
endif
fuzz: $(TEST_STAMP)
	@echo "make fuzz: Hypothesis seed $(FUZZ_SEED)"
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest $(FUZZ_TESTS) \
		--hypothesis-seed=$(FUZZ_SEED) -p no:cacheprovider $(XDIST) \
		|| { echo "make fuzz found a failing example; re-run it with: make fuzz FUZZ_SEED=$(FUZZ_SEED)"; exit 1; }

# Re-resolve the lock from pyproject.toml's ranges with uv, keeping every pin that still fits
# (add UPGRADE=--upgrade to move to the newest versions), torch for Linux from TORCH_INDEX; then
# rewrite binder/requirements.txt from it (tools/lock.py). Then `make execute` and `make test`.
lock: $(TEST_STAMP)
	$(BIN)/python -m tools.lock --torch-index $(TORCH_INDEX) $(UPGRADE)

binder: $(STAMP)
	$(BIN)/python -m tools.lock --binder

# The zoo: every checkpoint trained from its recipe in tools/pretrain.py, one process per core,
# one thread each; writes course_utils/zoo/*.safetensors and manifest.json and prints a summary.
# One checkpoint's bytes are re-made and compared with `python -m tools.pretrain --check NAME`.
pretrain: $(STAMP)
	$(BIN)/python -m tools.pretrain

evidence: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python -m tools.evidence

bench: $(STAMP)
	$(BIN)/python -m tools.bench
	$(BIN)/python -m tools.teachers_guide

# The website (Jupyter Book 1.x, configured in site/): the lessons as executed, never re-run; any
# warning (a broken link, a missing section) fails the build.
site: $(SITE_STAMP)
	$(BIN)/jupyter-book build . --config site/_config.yml --toc site/_toc.yml --path-output site --all -W -n --keep-going

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

# Two commands do all the set-up on a fresh machine:
#   make book   builds the whole book (PROFILE=ci|default|full, EDITION=instructor|student)
#   make test   runs every test
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PROFILE ?= default
EDITION ?= instructor
# torch's OpenMP threads spin when another process is busy; never let them.
export OMP_WAIT_POLICY ?= PASSIVE
export MPLBACKEND ?= Agg

BOOK_STAMP := $(VENV)/.book-installed
TEST_STAMP := $(VENV)/.test-installed

.PHONY: book test bench clean venv train labs assignments grade check-pages chromium

$(BOOK_STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e . \
	  || $(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	@touch $@

$(TEST_STAMP): $(BOOK_STAMP) requirements-test.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-test.txt -c requirements.txt
	@touch $@

venv: $(BOOK_STAMP)

book: $(BOOK_STAMP)
	$(PY) -m calibcourse.build --profile $(PROFILE) --edition $(EDITION)

# downloadable lab notebooks, student and instructor editions: _build/labs/{student,instructor}/
labs: $(BOOK_STAMP)
	$(PY) -m calibcourse.build --labs

# fill the result cache (data/cache) for a profile: every training run of the book
train: $(BOOK_STAMP)
	$(PY) -m calibcourse.cli train $(PROFILE)

test: $(TEST_STAMP) chromium
	$(PY) -m pytest

# Debian's chromium and its matching driver, for the rendered-page check (apt, where missing)
chromium:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; }

# every page of the built book in headless Chromium: typeset math, loaded images, no console
# errors, no machine paths or warnings in the text (run `make book` first)
check-pages: $(TEST_STAMP) chromium
	$(PY) -m calibcourse.pagecheck _build/html

BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(TEST_STAMP) requirements-bench.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-bench.txt -c requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps torch-uncertainty==0.13.0
	@touch $@

# benchmarks are never run as tests; one thread-policy for every run
bench: $(BENCH_STAMP)
	OMP_WAIT_POLICY=PASSIVE $(PY) bench/bench_metrics.py
	OMP_WAIT_POLICY=PASSIVE $(PY) bench/bench_calibrators.py
	OMP_WAIT_POLICY=PASSIVE $(PY) bench/bench_training.py

# homework (otter-grader): _build/assignments/<lab>/{student,solution}/<lab>.ipynb + <lab>-autograder.zip
GRADE_STAMP := $(VENV)/.grade-installed
$(GRADE_STAMP): $(BOOK_STAMP) requirements-grade.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-grade.txt -c requirements.txt
	@touch $@
# the tests grade submissions too: requirements-test.txt includes requirements-grade.txt
$(TEST_STAMP): requirements-grade.txt

assignments: $(GRADE_STAMP)
	$(PY) -m calibcourse.assignments assign

# make grade LAB=lab1_ece SUBMISSIONS=dir [TIMEOUT=seconds] [JOBS=2] -> _build/grades/<lab>.csv + feedback
grade: $(GRADE_STAMP)
	@test -n "$(LAB)" -a -n "$(SUBMISSIONS)" || { echo "usage: make grade LAB=<lab> SUBMISSIONS=<dir> [TIMEOUT=<seconds>] [JOBS=<n>]"; exit 2; }
	$(PY) -m calibcourse.assignments grade --lab "$(LAB)" --submissions "$(SUBMISSIONS)" \
	  $(if $(TIMEOUT),--timeout $(TIMEOUT)) $(if $(JOBS),--jobs $(JOBS))

clean:
	rm -rf _build book/generated

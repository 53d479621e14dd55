# Two commands do all the set-up on a fresh machine:
#   make book   builds the student edition (the public book) into _build/html;
#               make book EDITION=instructor the instructor edition into _build/instructor/html
#               (PROFILE=ci|default|full)
#   make test   runs every test (make test-fast: the toolkit's, in under 2 minutes)
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PROFILE ?= default
EDITION ?= student
# pip keeps no copy of the wheels it downloads: torch's CUDA build is about 5 GB installed, and a
# machine that fetches it from the registry would otherwise hold it twice.
PIP := $(PY) -m pip install --quiet --disable-pip-version-check --no-cache-dir
# the requirements go in with uv (pinned here; it fetches and unpacks in parallel: torch's 3 GB in about 30 s
# where pip takes two minutes or more), and with pip where uv cannot (an index only pip is configured for).
# --compile-bytecode as pip does: without the .pyc files (and with PYTHONDONTWRITEBYTECODE set) every process
# compiled torch, scipy and pandas again on import, and make test took 1.6 times as long
UV_VERSION := 0.13.9
UV := $(VENV)/bin/uv
INSTALL = $(UV) pip install --quiet --no-cache --compile-bytecode --python $(PY)
# $(call install,<pip arguments>): uv, else pip, with the same arguments
install = $(INSTALL) $(1) || $(PIP) $(1)
# torch's OpenMP threads spin when another process is busy; never let them.
export OMP_WAIT_POLICY ?= PASSIVE
export MPLBACKEND ?= Agg

BOOK_STAMP := $(VENV)/.book-installed
TEST_STAMP := $(VENV)/.test-installed

.PHONY: provenance book test test-fast test-python bench clean venv train status reproduce restamp smoke labs lab execute assignments grade check-pages chromium pdf tex slides

# TORCH=cpu: PyTorch's CPU-only build from PyTorch's own index first (about 200 MB, where the package index's
# Linux build brings 3 GB of NVIDIA libraries); the pins accept it (book/setup.md)
$(BOOK_STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@test -x $(UV) || $(PIP) uv==$(UV_VERSION)
	$(if $(filter cpu,$(TORCH)),$(PIP) torch==2.14.1 torchvision==0.29.1 --index-url https://download.pytorch.org/whl/cpu)
	$(call install,-r requirements.txt)
	$(PIP) --no-deps --no-build-isolation -e . \
	  || $(PIP) --no-deps -e .
	@touch $@

$(TEST_STAMP): $(BOOK_STAMP) requirements-test.txt
	$(call install,-r requirements-test.txt -c requirements.txt)
	@touch $@

venv: $(BOOK_STAMP)

# this machine in one line (CPU, kernel set, torch, threads): CI prints it first, so a red run names its machine
provenance: $(BOOK_STAMP)
	@$(PY) -m calibcourse.study.training.provenance

book: $(BOOK_STAMP)
	$(PY) -m calibcourse.tools.build --profile $(PROFILE) --edition $(EDITION)

# the labs' hand-outs (the notebooks make assignments hands out), the student edition: _build/labs/student/ (the instructor edition, with the
# solutions, only when asked for: make labs EDITION=instructor -> _build/labs/instructor/)
labs: $(BOOK_STAMP)
	$(PY) -m calibcourse.tools.build --labs --edition $(EDITION)

# a student's lab in JupyterLab, and the run before handing in (book/setup.md):
#   make lab NB=_build/labs/student/lab1_ece.ipynb       make execute NB=_build/labs/student/lab1_ece.ipynb
NB ?= _build/labs/student/lab1_ece.ipynb
lab: $(BOOK_STAMP)
	$(PIP) jupyterlab
	$(PY) -m jupyter lab $(NB)

execute: $(BOOK_STAMP)
	$(PY) -m jupyter nbconvert --to notebook --execute --inplace $(NB)

# fill the result cache for a profile: every training run of the book that has no entry
#   make train PROFILE=full                                  one after another, in this process
#   make train PROFILE=full EXECUTOR=local JOBS=2            2 at a time on this machine (submitit)
#     (torch threads per run: THREADS, default 1 for every executor; each entry records it)
#   make train PROFILE=full EXECUTOR=slurm PARTITION=gpu GPUS=1 TIME=720 ACCOUNT=proj [CPUS=8 MEM=32G]
#   make status PROFILE=full                                 done / running / failed / missing per run,
#                                                            and the stale entries (older training code)
# CALIBCOURSE_CACHE=dir puts the cache elsewhere (for SLURM: a folder every node sees).
EXECUTOR ?= serial
JOBS ?= 1
TRAIN_STAMP := $(VENV)/.train-installed
$(TRAIN_STAMP): $(BOOK_STAMP) requirements-train.txt
	$(call install,-r requirements-train.txt -c requirements.txt)
	@touch $@

train: $(TRAIN_STAMP)
	$(PY) -m calibcourse.tools.cli train $(PROFILE) --executor $(EXECUTOR) --jobs $(JOBS) $(if $(THREADS),--threads $(THREADS)) \
	  $(if $(PARTITION),--partition $(PARTITION)) $(if $(GPUS),--gpus $(GPUS)) $(if $(TIME),--time $(TIME)) \
	  $(if $(ACCOUNT),--account $(ACCOUNT)) $(if $(CPUS),--cpus $(CPUS)) $(if $(MEM),--mem $(MEM))

status: $(TRAIN_STAMP)
	$(PY) -m calibcourse.tools.cli status $(PROFILE)

# retrain a profile into a temporary cache on this machine, compare every run with its committed
# entry (provenance, outputs, printed measures), recompute the claims ledger from the retrained
# runs and list every verdict that changed (exit 1 if one did): PROFILE=ci unless given
REPRODUCE_PROFILE = $(if $(filter command line,$(origin PROFILE)),$(PROFILE),ci)
reproduce: $(TRAIN_STAMP)
	$(PY) -m calibcourse.tools.reproduce --profile $(REPRODUCE_PROFILE) --jobs $(JOBS) $(if $(THREADS),--threads $(THREADS))

# after a change of the training code that should move no number: prove it on this machine, then record the
# current code in the stale entries. On the entries' CPU kind the ci runs must come back byte-identical to
# them; on another kind the ci runs are trained with the entries' code (REF=<commit>, else the newest commit
# with their fingerprint) and with the working tree, and must agree bit for bit (JOBS=2: both at once)
restamp: $(TRAIN_STAMP)
	$(PY) -m calibcourse.tools.reproduce --restamp --jobs $(JOBS) $(if $(REF),--reference $(REF))

# every config of a profile trained for one batch on small files in the real formats, every page
# executed against them and the book rendered, all in a temporary folder (PROFILE=full in .ci/run)
smoke: $(BOOK_STAMP)
	$(PY) -m calibcourse.tools.smoke --profile $(PROFILE)

# the two cores each run half of the tests: TEST_SIDE (the ci retraining, the labs' two-edition build, Part I's
# pages executed, the run grid, the retraining tools, the build: about half of the time) in a second pytest whose log follows
# the first's; both must pass (TEST_SIDE= runs everything in one process)
TEST_SIDE ?= tests/test_cache.py tests/test_labs.py tests/test_book_shape.py tests/test_grid.py tests/test_reproduce.py \
  tests/test_build.py
test: $(TEST_STAMP) chromium
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check calibcourse tests bench
	$(PY) -m calibcourse.tools.audit
	@mkdir -p _build
	@if [ -z "$(strip $(TEST_SIDE))" ]; then $(PY) -m pytest; else \
	  $(PY) -m pytest $(TEST_SIDE) > _build/test-side.log 2>&1 & side=$$!; \
	  $(PY) -m pytest $(addprefix --ignore=,$(TEST_SIDE)); main=$$?; \
	  wait $$side; s=$$?; echo "== the second half: pytest $(TEST_SIDE) (exit $$s)"; cat _build/test-side.log; \
	  exit $$(( main || s )); fi

# the fast tier, for a change of the toolkit or a page: lint, the number audit, the toolkit's tests and
# doctests; no training, no notebook, no browser (tests/conftest.py marks every other test slow, and
# FAST_DOCTESTS names the one package folder whose doctests are fast)
test-fast: $(TEST_STAMP)
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check calibcourse tests bench
	$(PY) -m calibcourse.tools.audit
	$(PY) -m pytest -m "not slow" tests calibcourse/calibration

# the fast tier under another Python (`make test-python PYTHON=python3.12`): a venv of its own, by default
# _build/venv-python3.12 (PYVENV= names one you have), with the newest numpy, scipy, scikit-learn,
# matplotlib and pandas that Python gets, torch's CPU build and the peers at requirements-test.txt's pins;
# the package is this tree (PYTHONPATH), not installed. Tried: the Contributors' guide, *Python versions*
PYVENV ?= _build/venv-$(notdir $(PYTHON))
test-python:
	@test -x $(PYVENV)/bin/python || $(PYTHON) -m venv $(PYVENV)
	$(PYVENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-cache-dir torch==2.14.1 \
	  --index-url https://download.pytorch.org/whl/cpu
	$(PYVENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-cache-dir numpy scipy \
	  scikit-learn matplotlib pandas pytest \
	  $$(grep -E '^(torchmetrics|netcal|relplot|uncertainty-calibration)==' requirements-test.txt)
	PYTHONPATH=$(CURDIR) OMP_WAIT_POLICY=PASSIVE $(PYVENV)/bin/python -m pytest -p no:cacheprovider \
	  -m "not slow" tests calibcourse/calibration

# Debian's chromium and its matching driver, for the rendered-page check, and poppler's PDF tools for the
# PDF's check (apt, where missing); without apt-get or root, one line says so and their tests skip
chromium:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null && command -v pdftotext >/dev/null; then :; \
	elif ! command -v apt-get >/dev/null || [ "$$(id -u)" != 0 ]; then \
	  echo "make: chromium, chromedriver or pdftotext missing and no apt-get as root to install them: the browser and PDF checks will skip"; \
	else apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver poppler-utils; fi

# the book as one PDF, _build/pdf/calibcourse.pdf: the student edition typeset by XeLaTeX, then checked (every
# chapter's title, a figure in each); Debian's TeX Live installed with apt where missing (about 450 MB)
TEX_PACKAGES := texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended texlive-xetex \
  texlive-plain-generic latexmk fonts-freefont-otf poppler-utils
tex:
	@command -v xelatex >/dev/null && command -v latexmk >/dev/null && command -v pdftotext >/dev/null \
	  && kpsewhich FreeSerif.otf >/dev/null || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(TEX_PACKAGES); }

pdf: $(BOOK_STAMP) tex
	$(PY) -m calibcourse.tools.pdf --profile $(PROFILE)

# one reveal.js deck per chapter from notebooks/slides/<chapter>.md (else its cells tagged `slide`):
# _build/slides/<chapter>.html and index.html;
# reveal.js and KaTeX from the npm registry (pinned in calibcourse/tools/slides.py), copied beside the decks
slides: $(BOOK_STAMP)
	@command -v npm >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; }
	$(PY) -m calibcourse.tools.slides --profile $(PROFILE)

# every page of the built book in headless Chromium: typeset math, loaded images, no console
# errors, no machine paths or warnings in the text (run `make book` first)
check-pages: $(TEST_STAMP) chromium
	$(PY) -m calibcourse.tools.pagecheck _build/html

BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(TEST_STAMP) requirements-bench.txt
	$(PIP) -r requirements-bench.txt -c requirements.txt
	$(PIP) --no-deps torch-uncertainty==0.13.0
	@touch $@

# benchmarks are never run as tests; one thread-policy for every run
bench: $(BENCH_STAMP)
	OMP_WAIT_POLICY=PASSIVE $(PY) bench/bench_metrics.py
	OMP_WAIT_POLICY=PASSIVE $(PY) bench/bench_calibrators.py
	OMP_WAIT_POLICY=PASSIVE $(PY) bench/bench_training.py
	OMP_WAIT_POLICY=PASSIVE $(PY) bench/bench_under_load.py

# calibcourse report judged on held-out data: 36 scikit-learn model x data cases against no calibration and
# scikit-learn's CalibratedClassifierCV (4 to 9 minutes on 2 shared cores; the table is in book/guide_practitioners.md)
.PHONY: bench-panel
bench-panel: $(BOOK_STAMP)
	OMP_WAIT_POLICY=PASSIVE $(PY) bench/bench_report_panel.py $(if $(OUT),--out $(OUT))

# homework (otter-grader): _build/assignments/<lab>/{student,solution}/<lab>.ipynb + <lab>-autograder.zip
GRADE_STAMP := $(VENV)/.grade-installed
$(GRADE_STAMP): $(BOOK_STAMP) requirements-grade.txt
	$(PIP) -r requirements-grade.txt -c requirements.txt
	@touch $@
# the tests grade submissions and run the grid too: requirements-test.txt includes both files
$(TEST_STAMP): requirements-grade.txt requirements-train.txt

assignments: $(GRADE_STAMP)
	$(PY) -m calibcourse.tools.assignments assign

# make grade LAB=lab1_ece SUBMISSIONS=dir [TIMEOUT=seconds] [JOBS=n] -> _build/grades/<lab>.csv + feedback
# (two submissions at a time unless JOBS is given: the JOBS ?= 1 above is make train's default)
GRADE_JOBS = $(if $(filter command environment,$(firstword $(origin JOBS))),$(JOBS),2)
grade: $(GRADE_STAMP)
	@test -n "$(LAB)" -a -n "$(SUBMISSIONS)" || { echo "usage: make grade LAB=<lab> SUBMISSIONS=<dir> [TIMEOUT=<seconds>] [JOBS=<n>]"; exit 2; }
	$(PY) -m calibcourse.tools.assignments grade --lab "$(LAB)" --submissions "$(SUBMISSIONS)" \
	  $(if $(TIMEOUT),--timeout $(TIMEOUT)) --jobs $(GRADE_JOBS)

clean:
	rm -rf _build book/generated

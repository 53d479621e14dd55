import os
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pytest


def make_predictions(n, k, seed=0, sharpness=3.0, acc_boost=0.6, dtype=np.float64):
    """Random softmax probabilities with labels correlated with the argmax (no value on a bin edge)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * sharpness
    z -= z.max(1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(1, keepdims=True)
    y = np.where(rng.random(n) < acc_boost, p.argmax(1), rng.integers(0, k, n))
    return p.astype(dtype), y


@pytest.fixture
def preds():
    return make_predictions


@pytest.fixture(autouse=True)
def _torch_threads_restored():
    """No test leaks a torch thread count into the next: how a CPU sum is split over threads changes
    its last bits, so a count left behind would make later comparisons depend on test order."""
    import sys

    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    yield
    torch = sys.modules.get("torch")
    if torch is not None:
        want = before if before is not None else _startup_threads()
        if torch.get_num_threads() != want:  # only where the test changed it
            torch.set_num_threads(want)


def _startup_threads() -> int:
    """torch's thread count at start-up in this process (it was imported during the test)."""
    import os

    return int(os.environ.get("OMP_NUM_THREADS") or len(os.sched_getaffinity(0)))


# ---------------------------------------------------------------------------------------------- test tiers
#: The fast tier (`make test-fast`): the toolkit's test modules, with the doctests of
#: calibcourse/calibration: no training, no notebook, no browser, no committed cache. Every other
#: test, a new module's included, is marked `slow` on collection (`make test` runs both tiers); a
#: new toolkit module joins the fast tier by being listed here.
FAST_TEST_MODULES = frozenset({
    "test_binning_kernels", "test_brier_decomposition", "test_calibrators", "test_coverage", "test_metrics",
    "test_plots", "test_report_cli", "test_selective_priors", "test_sklearn_peer_tests", "test_stats",
    "test_validation", "test_audit", "test_package", "test_tiers", "test_labels_and_contract",
    "test_report_inputs", "test_report_panel", "test_quizzes",
})
#: the package folders whose doctests are fast (the toolkit's)
FAST_DOCTESTS = ("calibcourse/calibration/",)
_ROOT = Path(__file__).resolve().parent.parent


def is_fast(path) -> bool:
    """Whether the tests of the file ``path`` belong to the fast tier (a test module, or a module's doctests)."""
    try:
        rel = Path(path).resolve().relative_to(_ROOT).as_posix()
    except ValueError:  # a file outside the repository
        return False
    if rel.startswith("tests/"):
        return rel[len("tests/"):].removesuffix(".py") in FAST_TEST_MODULES
    return rel.startswith(FAST_DOCTESTS)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if not is_fast(item.path):
            item.add_marker(pytest.mark.slow)


def pytest_ignore_collect(collection_path, config):
    """Under ``-m "not slow"`` (make test-fast), a file whose tests would all be marked slow is not even
    imported (the training modules import torch)."""
    if config.getoption("markexpr", "") == "not slow" and collection_path.suffix == ".py":
        return True if not is_fast(collection_path) else None
    return None


# ------------------------------------------------------- lines a user must see, after the test summary
_NOTES = pytest.StashKey[list]()


def pytest_configure(config):
    config.stash[_NOTES] = []


@pytest.fixture(scope="session")
def terminal_note(request):
    """``terminal_note(line)``: print ``line`` in the terminal summary of this session (`make test`'s output)."""
    return request.config.stash[_NOTES].append


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    notes = config.stash.get(_NOTES, [])
    if notes:
        terminalreporter.section("calibcourse", sep="=")
        for line in notes:
            terminalreporter.write_line(line)

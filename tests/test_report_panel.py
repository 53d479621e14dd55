"""A few cases of the benchmark panel (``bench/bench_report_panel.py``, ``make bench-panel``): the
recommendation, applied to held-out data, is never worse than no calibration beyond the paired interval.
The full panel (36 cases, 4 to 9 minutes) runs in the bench, not here."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

PANEL = Path(__file__).resolve().parent.parent / "bench" / "bench_report_panel.py"


@pytest.fixture(scope="module")
def panel():
    spec = importlib.util.spec_from_file_location("bench_report_panel", PANEL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_paired_interval_is_a_bootstrap_of_the_mean_difference(panel):
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.1, 1, 400), rng.normal(0, 1, 400)
    est, lo, hi = panel.paired_interval(a, b, n_boot=2000)
    se = np.std(a - b, ddof=1) / np.sqrt(400)
    assert est == pytest.approx(np.mean(a - b)) and lo < est < hi
    assert hi - lo == pytest.approx(2 * 1.96 * se, rel=0.1)


@pytest.mark.parametrize("case", ["iris_svc", "wine_rf", "breast_cancer_nb"])
def test_a_small_calibration_set_gets_a_recommendation_that_holds_on_held_out_data(panel, case):
    """Issue 48: on 37 to 44 calibration rows the recommendation had ten times the model's held-out log loss."""
    data, model = case.rsplit("_", 1)
    row = panel.run_case(data, model)  # the command's defaults (1,000 resamples)
    assert row["rc"] == 0, row.get("error")
    assert row["d_ll"][1] <= 0 and row["d_brier"][1] <= 0, row  # not worse than none beyond the interval
    if "temperature" in panel.sk_methods():  # scikit-learn 1.8 and later (not on Python 3.10)
        assert row["ll_report"] <= 1.05 * row["ll_sk_temperature"], row  # scikit-learn's temperature, about
    else:
        assert np.isnan(row["ll_sk_temperature"]), row
    text = panel.table([row])
    assert case in text and "Median held-out log loss" in text

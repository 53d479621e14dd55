"""The toolkit's input checks (``calibcourse.calibration._validation``): every array a user hands
over is value-checked once per public call, bad input still gets its one line, and one tolerance
says what probabilities are."""
from __future__ import annotations

import collections
import hashlib
import sys
from functools import partial

import numpy as np
import pytest

from calibcourse.calibration import calibrators as C
from calibcourse.calibration import metrics as M
from calibcourse.calibration import stats
from calibcourse.calibration._validation import SUM_TOL, assumed_checked, check_probs, checked
from calibcourse.calibration.report import as_logits_and_probs, calibration_report, choose, cross_fit, report_html
from calibcourse.calibration.synthetic import scaled_logits

#: the functions that read an array's values to check them (each one pass over the data)
VALUE_CHECKS = {"check_prob_values", "_logit_values", "_label_values", "_class_values", "_weight_values"}


def _key(a):
    a = np.asarray(a)
    return a.shape, hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()


def value_checks(call) -> collections.Counter:
    """How many times ``call()`` value-checks each array (by its shape and content)."""
    counts = collections.Counter()

    def profile(frame, event, arg):
        code = frame.f_code
        if event == "call" and code.co_name in VALUE_CHECKS and code.co_filename.endswith(("_validation.py",
                                                                                            "_labels.py")):
            counts[_key(frame.f_locals[code.co_varnames[0]])] += 1

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return counts


def test_the_counter_counts():
    p = np.full((5, 2), 0.5)
    assert value_checks(lambda: (check_probs(p), check_probs(p)))[_key(p)] == 2
    y = [0, 1, 0, 1, 1]
    assert value_checks(lambda: M.ece(p, y)) == collections.Counter({_key(p): 1, _key(y): 1})


@pytest.mark.parametrize("kind", ["logits", "probs", "binary probs", "binary logit"])
def test_one_report_checks_each_array_once(kind):
    """Issue 38: in one report_html call every array is value-checked at most once, the user's
    scores and labels exactly once (11 and 54 times before)."""
    k = 2 if kind.startswith("binary") else 4
    z, y = scaled_logits(1500, k, factor=2.0, seed=0)
    scores = {"logits": z, "probs": M.softmax(z), "binary probs": M.softmax(z)[:, 1],
              "binary logit": z[:, 1] - z[:, 0]}[kind]
    counts = value_checks(lambda: report_html(scores, y, folds=3, n_boot=20))
    assert max(counts.values()) == 1, {key[0]: c for key, c in counts.items() if c > 1}
    assert counts[_key(y)] == 1
    if "probs" in kind:
        assert counts[_key(scores)] == 1


@pytest.mark.parametrize("call", ["fit", "interval", "paired", "seeds", "table", "choose", "cross_fit"])
def test_each_public_call_checks_its_arrays_once(call):
    z, y = scaled_logits(900, 3, factor=2.0, seed=1)
    p = M.softmax(z)
    q, r, s = M.softmax(z / 2), M.softmax(z / 3), M.softmax(z * 2)
    w = np.linspace(0.5, 1.5, len(y))
    z_, p_, _ = as_logits_and_probs(z)
    calls = {
        "fit": lambda: C.TemperatureScaling().fit(z, y, sample_weight=w),
        "interval": lambda: stats.interval(M.ece, p, y, n_boot=20),
        "paired": lambda: stats.paired_difference(M.nll, p, q, y, n_boot=20),
        "seeds": lambda: stats.paired_seeds_difference(M.ece, [p, q], [r, s], y, n_boot=20),
        "table": lambda: calibration_report(p, y, ci=True, n_boot=20),
        "choose": lambda: choose(p_, {"TS": q}, y, n_boot=20),
        "cross_fit": lambda: cross_fit(z_, p_, y, folds=3),
    }
    counts = value_checks(calls[call])
    assert max(counts.values()) == 1, {key[0]: c for key, c in counts.items() if c > 1}
    assert counts[_key(y)] == 1


def test_a_calibrators_fit_and_predict_check_once_each():
    z, y = scaled_logits(600, 2, factor=2.0, seed=2)
    p1 = M.softmax(z)[:, 1]
    for cal in (C.PlattScaling(), C.IsotonicCalibration(), C.HistogramBinning(), C.BBQ()):
        fitted = cal.fit(p1, y)
        assert value_checks(partial(cal.fit, p1, y))[_key(p1)] == 1, type(cal).__name__
        assert value_checks(partial(fitted.predict_proba, p1))[_key(p1)] == 1, type(cal).__name__
    ova = C.OneVsAll(C.IsotonicCalibration())
    assert value_checks(lambda: ova.fit(M.softmax(z), y))[_key(M.softmax(z))] == 1


def test_bad_input_is_still_refused_where_it_comes_in():
    """Skipping the nested checks loses none: a public call refuses bad data in one line."""
    z, y = scaled_logits(300, 3, factor=2.0, seed=0)
    p = M.softmax(z)
    nan = p.copy()
    nan[4, 1] = np.nan
    high = y.copy()
    high[0] = 3
    for bad_call, message in [
        (lambda: report_html(np.where(np.arange(3) == 1, np.nan, z), y, folds=3, n_boot=20), "contains NaN"),
        (lambda: report_html(z, high, folds=3, n_boot=20), "4 distinct values"),
        (lambda: stats.interval(M.ece, nan, y, n_boot=20), "probs: probs contains NaN"),
        (lambda: stats.paired_difference(M.ece, p, nan, y, n_boot=20), "probs_b: probs contains NaN"),
        (lambda: stats.seeds_difference(M.ece, [p, nan], [p, p], y, n_boot=20), r"probs_a_list\[1\]: probs contains"),
        (lambda: calibration_report(nan, y), "contains NaN"),
        (lambda: choose(p, {"TS": nan}, y, n_boot=20), "contains NaN"),
        (lambda: choose(p, [p], y, n_boot=20), r"oof must be a dict .* as cross_fit returns; got list"),
        (lambda: M.ece(p, y + 1), r"must be < the number of classes \(3\); got 3 \(integer labels are the columns' "
                                  r"indices here; labels that name classes .* numpy.searchsorted"),
        (lambda: cross_fit(np.log(p), nan, y, folds=3), "probs contains NaN"),
        (lambda: cross_fit(np.log(nan), p, y, folds=3), "logits contains NaN"),
        (lambda: C.TemperatureScaling().fit(z, high), "4 distinct values"),
        (lambda: C.PlattScaling().fit(nan[:, 1], y % 2), "contains NaN"),
    ]:
        with pytest.raises(ValueError, match=message):
            bad_call()


def test_checked_is_scoped():
    """The skipping holds inside ``checked()`` only, and ends with it (an error included)."""
    bad = np.array([[0.5, 0.7]])
    assert not assumed_checked()
    with checked():
        assert check_probs(bad).shape == (1, 2)  # not value-checked: the caller vouched for it
    with pytest.raises(ValueError, match="must sum to 1"):
        check_probs(bad)
    with pytest.raises(RuntimeError), checked():
        raise RuntimeError
    assert not assumed_checked()


def test_one_tolerance_says_what_probabilities_are():
    """The report's detection of probabilities and the measures' check agree: rows within
    SUM_TOL of 1 are probabilities (the report renormalizes them), rows beyond it are refused
    by the measures, and the report's "auto" asks what they are (full-precision values in [0, 1]
    whose rows do not sum to 1 may be either)."""
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4), 600)
    y = rng.integers(0, 4, 600)
    near = p * (1 + 0.5 * SUM_TOL)  # rows sum to 1.0005: as probabilities written with four decimals
    assert M.ece(near, y) >= 0
    z, q, kind = as_logits_and_probs(near)
    assert kind == "probs" and np.allclose(q.sum(1), 1, atol=1e-12)
    far = p * (1 + 2 * SUM_TOL)
    with pytest.raises(ValueError, match="must sum to 1"):
        M.ece(far, y)
    with pytest.raises(ValueError, match="cannot tell whether these are probabilities or logits"):
        as_logits_and_probs(far)
    assert as_logits_and_probs(far, kind="logits")[2] == "logits"
    with pytest.raises(ValueError, match="must sum to 1"):
        as_logits_and_probs(far, kind="probs")

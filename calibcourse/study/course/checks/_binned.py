"""The cases of the binned measures and their check, shared by Lab 1 (ECE, MCE, the l2 error) and Lab 4
(the class-wise ECE): confidences on bin edges, one bin, one class, random probabilities."""
from __future__ import annotations

import numpy as np

from calibcourse.calibration import metrics as M
from calibcourse.study.course.checks._harness import _call, _close, _short, _start


# ------------------------------------------------------------------ cases
def _random_cases(seed=0):
    rng = np.random.default_rng(seed)
    for n, k in ((50, 2), (300, 5), (1000, 10)):
        z = rng.normal(size=(n, k)) * 2.5
        p = M.softmax(z)
        y = np.where(rng.random(n) < 0.7, p.argmax(1), rng.integers(0, k, n))
        yield f"random probabilities, n={n}, K={k}", p, y


def _edge_cases(seed=0):
    """Top-label confidences exactly on bin edges and exactly 1.0; all samples in one bin; one class."""
    if seed == 0:  # top-label confidences 0.8, 0.6, 0.6, 0.8, 1.0, 0.5, 0.7 on the edges of 5 bins
        p_edges = np.array([[0.8, 0.2], [0.6, 0.4], [0.4, 0.6], [0.2, 0.8], [0.0, 1.0], [0.5, 0.5], [0.7, 0.3]])
        y_edges, m_edges = np.array([0, 1, 1, 0, 1, 0, 0]), 5
        p_one, y_one = np.tile([0.85, 0.1, 0.05], (20, 1)), np.r_[np.zeros(15, int), np.ones(5, int)]
    else:
        rng = np.random.default_rng(seed)
        m_edges = int(rng.integers(4, 13))
        edges = np.linspace(0.0, 1.0, m_edges + 1)
        c = rng.choice(edges[(edges >= 0.5)], size=int(rng.integers(8, 16)))
        c[:2] = 1.0
        c[2] = edges[-2]   # an edge below 1, whose bin the two conventions fill differently
        # beside every edge value, one inside the bin it closes, (e - 1/M, e]: Guo's bins put the two
        # together, bins closed on the left ([l, u)) apart; labels are drawn until the two conventions
        # give other ECEs, MCEs and l2 errors, so that a function with the wrong edges fails
        inner = np.unique(c) - 0.5 / m_edges
        c = np.r_[c, inner[inner > 0.5]]
        flip = rng.random(c.size) < 0.5
        p_edges = np.where(flip[:, None], np.c_[1 - c, c], np.c_[c, 1 - c])
        for _ in range(500):
            y_edges = rng.integers(0, 2, c.size)
            if _conventions_differ(p_edges, y_edges, m_edges):
                break
        top = float(rng.uniform(0.5, 0.95))
        p_one = np.tile([top, (1 - top) * 0.6, (1 - top) * 0.4], (int(rng.integers(10, 30)), 1))
        y_one = rng.integers(0, 3, p_one.shape[0])
    yield (f"confidences exactly on bin edges ({m_edges} bins), and exactly 1.0", p_edges, y_edges, m_edges)
    yield "every sample in one bin (other bins empty)", p_one, y_one, 10
    rng = np.random.default_rng(1 + seed)
    yield "one class only in the labels", M.softmax(rng.normal(size=(30, 3))), np.zeros(30, int), 15


def _gaps(p, y, n_bins, side):
    """Per-bin weight and |acc - conf| of the top label, bins closed on the right (``side="left"``,
    Guo et al.'s) or on the left (``side="right"``)."""
    conf, ok = p.max(1), (p.argmax(1) == y)
    idx = np.searchsorted(np.linspace(0, 1, n_bins + 1)[1:-1], conf, side=side)
    cnt = np.bincount(idx, minlength=n_bins)
    keep = cnt > 0
    gap = np.abs(np.bincount(idx, ok - conf, n_bins)[keep]) / cnt[keep]
    return cnt[keep] / len(conf), gap


def _summaries(p, y, n_bins, side="left") -> np.ndarray:
    """The ECE, MCE and l2 calibration error of :func:`_gaps`' bins."""
    w, g = _gaps(p, y, n_bins, side)
    return np.array([w @ g, g.max(), np.sqrt(w @ g**2)])


def _conventions_differ(p, y, n_bins) -> bool:
    """Whether bins closed on the left give another ECE, MCE and l2 error than Guo et al.'s."""
    return bool(np.all(np.abs(_summaries(p, y, n_bins, "left") - _summaries(p, y, n_bins, "right")) > 1e-6))


def _binned_cases(seed):
    cases = list(_edge_cases(seed)) + [(l, p, y, 15) for l, p, y in _random_cases(seed)]
    if seed:  # a hidden case at another bin count, where the ECE, MCE and l2 error all differ from 15 bins'
        rng = np.random.default_rng(seed)
        for attempt in range(1, 50):
            label, p, y = list(_random_cases(seed + attempt))[1]
            n_bins = int(rng.choice([5, 7, 8, 12, 20, 25]))
            if np.all(np.abs(_summaries(p, y, n_bins) - _summaries(p, y, 15)) > 1e-6):
                break
        cases.append((f"{label}, {n_bins} bins", p, y, n_bins))
    return cases


HINT_EDGES = ("use Guo et al.'s bins ((m-1)/M, m/M], closed on the right, with a confidence of "
              "exactly 0 in the first bin: np.searchsorted(edges[1:-1], conf, side='left') does it")


def _unweighted_ece(p, y, n_bins):
    rb = M.reliability_bins(p, y, n_bins=n_bins)
    keep = rb.count > 0
    return float(np.mean(np.abs(rb.gap[keep])))


def _check_binned(fn, name, reference, verbose, strict, seed, rules, what, hint_text=None, extra=()):
    report = _start(name, fn, verbose, strict, seed, rules)
    for label, p, y, n_bins in _binned_cases(seed) + list(extra):
        ok, got = _call(report, label, fn, p, y, n_bins)
        if not ok:
            continue
        expected = reference(p, y, n_bins=n_bins)
        good = _close(got, expected, 1e-6) and np.isfinite(float(got))
        hint = HINT_EDGES if "edges" in label else hint_text or (
            "weight each bin's |acc - conf| by its share of samples" if what == "ECE"
            else "take the maximum over non-empty bins only")
        detail = (f"probs[:, max] = {_short(p.max(1))}, labels = {_short(y)}, n_bins = {n_bins}\n"
                  f"expected {what} = {expected:.6f}, got {got}")
        if not good and what == "ECE":
            unweighted = _unweighted_ece(p, y, n_bins)
            if _close(got, unweighted, 1e-6) and abs(unweighted - expected) > 1e-6:
                detail += ("\nyour value is the UNWEIGHTED average of |acc - conf| over the non-empty bins: "
                           "a bin of 2 samples counts as much as a bin of 200")
                hint = "ECE = sum_m |B_m| / n * |acc(B_m) - conf(B_m)|: weight each bin by its share of samples"
        report.case(label, good, detail, hint, tol="1e-06, absolute")
    return report.done()

"""Selective prediction (calibration.selective) and label shift (calibration.priors), against
scikit-learn's AUROC, a brute-force risk-coverage loop and Bayes' rule on a model with exact posteriors."""
import numpy as np
import pytest
from scipy.special import softmax
from sklearn.metrics import roc_auc_score

from calibcourse.calibration import priors as PR
from calibcourse.calibration import selective as SEL


def _multiclass(n=2000, k=5, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2
    if ties:
        z = np.round(z)   # many equal confidences
    p = softmax(z, axis=1)
    y = np.array([rng.choice(k, p=row) for row in p])
    return p, y


@pytest.mark.parametrize("ties", [False, True])
def test_misclassification_auroc_is_sklearns(ties):
    p, y = _multiclass(ties=ties)
    correct = p.argmax(1) == y
    assert SEL.misclassification_auroc(p, y) == pytest.approx(roc_auc_score(correct, p.max(1)), abs=1e-12)


def test_auroc_is_sklearns_and_symmetric():
    rng = np.random.default_rng(1)
    a, b = rng.normal(1, 1, 300), np.round(rng.normal(0, 1, 200), 1)
    ref = roc_auc_score(np.r_[np.ones(300), np.zeros(200)], np.r_[a, b])
    assert SEL.auroc(a, b) == pytest.approx(ref, abs=1e-12)
    assert SEL.auroc(b, a) == pytest.approx(1 - ref, abs=1e-12)


@pytest.mark.parametrize("ties", [False, True])
def test_risk_coverage_matches_a_brute_force_loop(ties):
    p, y = _multiclass(n=300, ties=ties)
    conf, wrong = p.max(1), p.argmax(1) != y
    cov, risk = SEL.risk_coverage(p, y)
    thresholds = np.sort(np.unique(conf))[::-1]
    assert len(cov) == len(thresholds)
    for c, r, t in zip(cov, risk, thresholds, strict=True):
        answered = conf >= t
        assert c == pytest.approx(answered.mean()) and r == pytest.approx(wrong[answered].mean())
    assert cov[-1] == 1.0 and risk[-1] == pytest.approx(wrong.mean())
    # AURC: with no ties, the mean over k of the error among the k most confident
    if not ties:
        order = np.argsort(-conf)
        ref = np.mean(np.cumsum(wrong[order]) / np.arange(1, len(y) + 1))
        assert SEL.aurc(p, y) == pytest.approx(ref, abs=1e-12)


def test_binary_temperature_cannot_change_the_ranking_but_multiclass_can():
    rng = np.random.default_rng(2)
    z = rng.normal(0, 3, 500)
    y = (rng.random(500) < 1 / (1 + np.exp(-z))).astype(int)
    base = SEL.misclassification_auroc(1 / (1 + np.exp(-z)), y)
    for t in (0.3, 2.0, 10.0):
        assert SEL.misclassification_auroc(1 / (1 + np.exp(-z / t)), y) == pytest.approx(base, abs=1e-12)
    # the module's example: two samples swap order between T = 1 and T = 100
    a, b = np.array([3.0, 2.9, -100.0]), np.array([2.0, 0.0, 0.0])
    assert softmax(a).max() < softmax(b).max()
    assert softmax(a / 100).max() > softmax(b / 100).max()


def test_selective_bad_input_names_the_problem():
    p, y = _multiclass(n=20)
    with pytest.raises(ValueError, match="both right and wrong"):
        SEL.misclassification_auroc(np.eye(3)[[0, 1, 2]], [0, 1, 2])
    with pytest.raises(ValueError, match="labels"):
        SEL.risk_coverage(p, y[:5])
    with pytest.raises(ValueError, match="negative is empty"):
        SEL.auroc([1.0], [])


def _gaussian_task(priors, n, seed):
    """Three classes at means 0, 2, 4 (unit variance): exact posteriors under any priors."""
    rng = np.random.default_rng(seed)
    y = rng.choice(3, size=n, p=priors)
    x = rng.normal(2.0 * y, 1.0)
    like = np.exp(-0.5 * (x[:, None] - 2.0 * np.arange(3)) ** 2)
    return like, y


def test_adjust_priors_is_bayes_rule():
    like, _ = _gaussian_task([1 / 3] * 3, 1000, 0)
    old, new = np.array([0.5, 0.3, 0.2]), np.array([0.1, 0.2, 0.7])
    p_old = like * old / (like * old).sum(1, keepdims=True)
    p_new = like * new / (like * new).sum(1, keepdims=True)
    np.testing.assert_allclose(PR.adjust_priors(p_old, old, new), p_new, atol=1e-12)


def test_em_recovers_the_deployed_priors_and_posteriors():
    train, deployed = np.array([1 / 3] * 3), np.array([0.6, 0.3, 0.1])
    like, y = _gaussian_task(deployed, 30000, 1)
    p_train = like / like.sum(1, keepdims=True)   # exact posteriors under the training priors
    est, adjusted = PR.em_priors(p_train, train)
    assert np.abs(est - deployed).max() < 0.02   # sampling error of 30,000 draws, about 0.005
    truth = like * deployed / (like * deployed).sum(1, keepdims=True)
    assert np.abs(adjusted - truth).mean() < 0.01
    # EM's fixed point: the estimate is the mean adjusted posterior
    np.testing.assert_allclose(adjusted.mean(0), est, atol=1e-6)
    # and it beats the unadjusted model in NLL on the deployed labels
    nll = lambda q: -np.mean(np.log(q[np.arange(len(y)), y]))  # noqa: E731
    assert nll(adjusted) < nll(p_train)


def test_priors_bad_input_names_the_problem():
    p = np.full((4, 3), 1 / 3)
    with pytest.raises(ValueError, match="train_priors must be 3 class frequencies"):
        PR.em_priors(p, [0.5, 0.5])
    with pytest.raises(ValueError, match="new_priors must be positive and sum to 1"):
        PR.adjust_priors(p, [1 / 3] * 3, [0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match="max_iter"):
        PR.em_priors(p, [1 / 3] * 3, max_iter=0)


def test_em_is_the_maximum_likelihood_priors_found_by_a_general_optimizer():
    """An independent computation: the deployed inputs' log-likelihood under the model,
    sum_x log sum_y p(y | x) pi_y / pi0_y, maximized over the simplex by scipy."""
    from scipy.optimize import minimize

    p, _ = _multiclass(n=1500, k=4, seed=3)
    pi0 = np.array([0.4, 0.3, 0.2, 0.1])
    est, _ = PR.em_priors(p, pi0, tol=1e-12, max_iter=20000)

    def neg_loglik(theta):
        pi = softmax(np.r_[0.0, theta])
        return -np.log((p * (pi / pi0)).sum(1)).sum()

    res = minimize(neg_loglik, np.zeros(3), method="BFGS", options={"gtol": 1e-9})
    np.testing.assert_allclose(est, softmax(np.r_[0.0, res.x]), atol=1e-4)


def _replicated_shift(soft_signal, seed=4):
    """A source set and a target made of its rows, each class's repeated a whole number of times: the
    target's predictions are then exactly the mixture BBSE solves for, and its priors are known."""
    rng = np.random.default_rng(seed)
    k, n = 3, 300
    y = np.repeat(np.arange(k), n // k)
    z = rng.normal(size=(n, k)) + soft_signal * np.eye(k)[y]
    p = softmax(z, axis=1)
    times = np.array([3, 1, 2])
    rows = np.concatenate([np.tile(np.flatnonzero(y == j), t) for j, t in enumerate(times)])
    return p, y, p[rows], y[rows]


@pytest.mark.parametrize("soft", [False, True])
def test_bbse_recovers_the_priors_of_an_exact_mixture(soft):
    ps, ys, pt, yt = _replicated_shift(soft_signal=2.0)
    est, adjusted = PR.bbse_priors(ps, ys, pt, soft=soft)
    truth = np.bincount(yt) / len(yt)        # 3 : 1 : 2
    np.testing.assert_allclose(est, truth, atol=1e-10)
    np.testing.assert_allclose(adjusted, PR.adjust_priors(pt, np.bincount(ys) / len(ys), truth), atol=1e-9)


def test_bbse_of_a_perfect_classifier_counts_the_predicted_classes():
    rng = np.random.default_rng(5)
    ys, yt = rng.integers(0, 4, 400), rng.integers(0, 4, 300)
    one_hot = lambda y: np.eye(4)[y] * 0.96 + 0.01   # noqa: E731  (rows sum to 1, argmax the class)
    est, _ = PR.bbse_priors(one_hot(ys), ys, one_hot(yt))
    np.testing.assert_allclose(est, np.bincount(yt, minlength=4) / 300, atol=1e-12)


def test_bbse_bad_input_names_the_problem():
    p = softmax(np.random.default_rng(6).normal(size=(30, 3)), axis=1)
    y = np.arange(30) % 3
    with pytest.raises(ValueError, match="class 2 is absent"):
        PR.bbse_priors(p, np.arange(30) % 2, p)
    with pytest.raises(ValueError, match="target_probs must have 3 columns"):
        PR.bbse_priors(p, y, p[:, :2] / p[:, :2].sum(1, keepdims=True))
    with pytest.raises(ValueError, match="singular"):
        PR.bbse_priors(np.tile([[0.8, 0.1, 0.1]], (30, 1)), y, p)
    with pytest.raises(ValueError, match="soft must be True or False"):
        PR.bbse_priors(p, y, p, soft="yes")


# --------------------------------------------------------------------------- chapter 6's deployment loop
from calibcourse.study.analysis import deployment  # noqa: E402


def test_ood_metric_is_sklearns_auroc_of_the_confidence():
    rng = np.random.default_rng(3)
    a, b = softmax(rng.normal(size=(200, 4)) * 3, axis=1), softmax(rng.normal(size=(80, 4)), axis=1)
    p, g = deployment.with_ood(a, b)
    assert deployment.ood_metric(p, g) == pytest.approx(roc_auc_score(g, p.max(1)), abs=1e-12)


def test_label_shift_indices_draw_each_class_to_its_prior_without_replacement():
    y = np.repeat(np.arange(4), [50, 60, 70, 80])
    pri = np.array([0.4, 0.3, 0.2, 0.1])
    idx = deployment.label_shift_indices(y, pri, 100, seed=1)
    assert len(set(idx)) == len(idx) == 100
    np.testing.assert_array_equal(np.bincount(y[idx]), [40, 30, 20, 10])
    assert not np.array_equal(idx, deployment.label_shift_indices(y, pri, 100, seed=2))
    with pytest.raises(ValueError, match="class 0 has 50 rows"):
        deployment.label_shift_indices(y, pri, 200)


def test_recalibration_curve_refits_the_nll_temperature_on_the_drawn_labels():
    """With n = the whole pool, the refitted temperature is the NLL minimizer on the pool (scipy's, here)."""
    from scipy.optimize import minimize_scalar
    from scipy.special import log_softmax

    rng = np.random.default_rng(4)
    z = rng.normal(size=(400, 5)) * 4
    y = np.array([rng.choice(5, p=row) for row in softmax(z / 2.5, axis=1)])   # the logits are 2.5x too sharp
    curve, ev = deployment.recalibration_curve([z], y, sizes=[0, 200], repeats=2, seed=0)
    pool = np.setdiff1d(np.arange(400), ev)
    nll = lambda t: -np.mean(log_softmax(z[pool] / t, axis=1)[np.arange(len(pool)), y[pool]])  # noqa: E731
    t_ref = minimize_scalar(nll, bounds=(0.05, 50), method="bounded", options={"xatol": 1e-8}).x
    assert curve.loc[curve["n"] == 200, "T"].to_numpy() == pytest.approx([t_ref, t_ref], rel=1e-4)
    assert curve.loc[curve["n"] == 0, "T"].tolist() == [1.0] and curve["refitted"].sum() == 2
    assert len(ev) == 200 and curve.groupby("n")["ECE"].mean()[200] < curve.groupby("n")["ECE"].mean()[0]
    # a draw whose every label is the argmax has no finite temperature: it keeps T = 1, marked
    right = z.argmax(1)
    curve, _ = deployment.recalibration_curve([z], right, sizes=[10], repeats=3)
    assert curve["T"].tolist() == [1.0] * 3 and not curve["refitted"].any()
    with pytest.raises(ValueError, match=r"sizes\[0\] \(at most the labelled pool's 200\) must be an integer from 0"):
        deployment.recalibration_curve([z], y, sizes=[201])


@pytest.mark.parametrize("target", [0.0, 0.02, 0.1, 0.5])
def test_risk_threshold_is_the_largest_coverage_at_the_target_risk_by_brute_force(target):
    p, y = _multiclass(n=600, seed=7, ties=True)
    conf, right = p.max(1), p.argmax(1) == y
    best = (float("inf"), 0.0, 0.0)
    for c in np.unique(conf):                      # every threshold, answered: confidence >= c
        answered = conf >= c
        risk = 1 - right[answered].mean()
        if risk <= target and answered.mean() > best[1]:
            best = (c, answered.mean(), risk)
    got = SEL.risk_threshold(p, y, target)
    assert got[0] == pytest.approx(best[0]) and got[1] == pytest.approx(best[1]) and got[2] == pytest.approx(best[2])
    with pytest.raises(ValueError, match="target_risk must be a number in"):
        SEL.risk_threshold(p, y, 1.5)

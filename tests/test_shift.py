"""Chapter 6's machinery: rotated test sets, deep ensembles, MC dropout, the contrast over seeds."""
import numpy as np
import pytest
import torch
from scipy import ndimage
from scipy import stats as sps
from scipy.special import softmax

from calibcourse.calibration import metrics, stats
from calibcourse.study.runs.cache import config_key
from calibcourse.study.runs.experiments import experiments, run
from calibcourse.study.training.config import normalize_config
from calibcourse.study.training.models import LeNet5
from calibcourse.study.training.predictive import log_mean_softmax, mc_dropout_logits, member_config
from calibcourse.study.training.results import predict_logits
from calibcourse.study.training.shift import check_shift, rotate_images, shifted_sets
from calibcourse.study.training.train import train

SHIFT = {"kind": "rotate", "levels": [30, 90], "n": 50}
TINY = {"data": {"name": "digits", "n_train": 200}, "model": {"name": "mlp", "depth": 1, "width": 16},
        "epochs": 2, "seed": 3}


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(0)
    return rng.random((6, 1, 28, 28)).astype(np.float32)


def test_rotation_by_zero_is_the_identity_and_by_90_a_quarter_turn(images):
    assert np.array_equal(rotate_images(images, 0), images)
    # an independent reference: a quarter turn counter-clockwise of the pixel grid (28 is even:
    # the grid maps onto itself, so the interpolation only moves pixels)
    np.testing.assert_allclose(rotate_images(images, 90), np.rot90(images, k=1, axes=(2, 3)), atol=1e-5)
    np.testing.assert_allclose(rotate_images(images, 180), images[:, :, ::-1, ::-1], atol=1e-5)


def test_rotating_normalized_images_equals_normalizing_rotated_ones(images):
    mean, std = 0.13, 0.31
    raw = ndimage.rotate(images[:, 0].astype(np.float64), 37, axes=(2, 1), reshape=False, order=1, cval=0.0)
    expected = (raw - mean) / std
    got = rotate_images((images - mean) / std, 37, fill=-mean / std)[:, 0]
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_shifted_sets_take_the_first_n_images_and_their_labels(images):
    y = np.array([4, 1, 0, 7, 7, 2])
    sets = shifted_sets(images, y, {"kind": "rotate", "levels": [15, 45], "n": 4})
    assert list(sets) == ["shift/15", "shift/45"]
    for name, angle in (("shift/15", 15), ("shift/45", 45)):
        X, labels = sets[name]
        assert labels.tolist() == [4, 1, 0, 7]
        np.testing.assert_array_equal(X, rotate_images(images[:4], angle))
    assert len(shifted_sets(images, y, {"kind": "rotate", "levels": [15], "n": 100})["shift/15"][1]) == 6


@pytest.mark.parametrize("bad, message", [
    ({"kind": "blur", "levels": [15], "n": 10}, "shift.kind"),
    ({"kind": "rotate", "levels": [45, 15], "n": 10}, "shift.levels"),
    ({"kind": "rotate", "levels": [0], "n": 10}, "shift.levels"),
    ({"kind": "rotate", "levels": [15], "n": 0}, "shift.n"),
    ({"kind": "rotate", "levels": [15]}, "shift must be"),
])
def test_a_bad_shift_section_is_refused_by_name(bad, message):
    with pytest.raises(ValueError, match=message):
        normalize_config({**TINY, "shift": bad})


@pytest.mark.parametrize("key", ["ensemble", "mc_dropout"])
def test_ensemble_and_mc_dropout_must_be_positive_integers(key):
    for bad in (0, 2.0, True):
        with pytest.raises(ValueError, match=key):
            normalize_config({**TINY, key: bad})


def test_the_optional_keys_change_no_existing_cache_key():
    # the committed entry of chapter 2's LeNet-5 (its folder name is the key it was stored under)
    cfg = experiments("default")["ch2/model/small"]
    assert config_key(cfg) == config_key({**cfg, "shift": None, "ensemble": None, "mc_dropout": None})
    assert normalize_config({**cfg, "shift": {}}) == normalize_config(cfg)
    from calibcourse.study.runs.cache import REPOSITORY_CACHE

    assert (REPOSITORY_CACHE / config_key(cfg)).is_dir()


def test_lenet_dropout_adds_layers_but_keeps_the_weights():
    torch.manual_seed(0)
    plain = LeNet5()
    torch.manual_seed(0)
    dropped = LeNet5(dropout=0.3)
    a, b = plain.state_dict(), dropped.state_dict()
    assert [v.shape for v in a.values()] == [v.shape for v in b.values()]
    assert all(torch.equal(x, y) for x, y in zip(a.values(), b.values(), strict=True))
    assert not any(isinstance(m, torch.nn.Dropout) for m in plain.modules())
    with pytest.raises(ValueError, match="dropout"):
        LeNet5(dropout=1.0)


def test_log_mean_softmax_is_the_mean_of_the_softmaxes():
    z = np.random.default_rng(1).normal(scale=3, size=(4, 7, 5))
    expected = softmax(z, axis=2).mean(axis=0)
    np.testing.assert_allclose(softmax(log_mean_softmax(z), axis=1), expected, rtol=1e-12)


def test_an_ensemble_of_one_is_the_single_network():
    single = train(TINY, progress=False)
    one = train({**TINY, "ensemble": 1}, progress=False)
    for split in ("val", "test"):
        np.testing.assert_allclose(one.probs(split), single.probs(split), atol=1e-6)
        np.testing.assert_array_equal(one.labels(split), single.labels(split))
    assert one.info["members"] == 1 and one.history["member"].tolist() == [0, 0]


def test_an_ensemble_averages_its_members_softmax():
    ens = train({**TINY, "ensemble": 2}, progress=False)
    members = [train(member_config(ens.config, j), progress=False) for j in range(2)]
    assert members[0].config["seed"] == TINY["seed"]  # member 0 is the run of the ensemble's own seed
    expected = (members[0].probs("test") + members[1].probs("test")) / 2
    np.testing.assert_allclose(ens.probs("test"), expected, atol=1e-6)
    assert ens.logits("test").dtype == np.float32


def test_mc_dropout_without_dropout_is_the_deterministic_prediction():
    plain = train(TINY, progress=False)
    mc = train({**TINY, "mc_dropout": 3}, progress=False)  # the MLP has no dropout layer: p = 0
    np.testing.assert_allclose(mc.probs("test"), plain.probs("test"), atol=1e-6)
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Dropout(0.0), torch.nn.Linear(6, 3))
    X = torch.randn(9, 4)
    np.testing.assert_allclose(softmax(mc_dropout_logits(net, X, 4, seed=0), axis=1),
                               softmax(predict_logits(net, X), axis=1), rtol=1e-12)


def test_mc_dropout_averages_seeded_passes_with_dropout_on():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Dropout(0.5), torch.nn.Linear(16, 3))
    X = torch.randn(9, 4)
    state = torch.get_rng_state()
    got = mc_dropout_logits(net, X, 5, seed=7)
    assert torch.equal(torch.get_rng_state(), state)  # the caller's random state is untouched
    torch.manual_seed(7)
    net.train()
    with torch.no_grad():
        expected = np.mean([softmax(net(X).double().numpy(), axis=1) for _ in range(5)], axis=0)
    net.eval()
    np.testing.assert_allclose(softmax(got, axis=1), expected, rtol=1e-10)
    assert not np.allclose(expected, softmax(predict_logits(net, X), axis=1), atol=1e-3)


def test_shifted_splits_are_read_from_a_cached_entry():
    r = run("ch6/CE/s0", "ci")
    levels = experiments("ci")["ch6/CE/s0"]["shift"]["levels"]
    for a in levels:
        z, y = r.logits(f"shift/{a}"), r.labels(f"shift/{a}")
        assert z.shape == (len(y), 10) and z.dtype == np.float32
        np.testing.assert_array_equal(y, r.labels("test")[: len(y)])
    with pytest.raises(KeyError, match="shift/30"):
        r.logits("shift/45")


def test_the_out_of_distribution_images_are_stored_beside_the_shifted_digits():
    from calibcourse.study.training.shift import OOD_LABEL, OOD_SPLIT, ood_images

    cfg = experiments("ci")["ch6/CE/s0"]
    r = run("ch6/CE/s0", "ci")
    m = cfg["shift"]["ood"]
    assert r.logits(OOD_SPLIT).shape == (m, 10) and r.logits(OOD_SPLIT).dtype == np.float32
    assert (r.labels(OOD_SPLIT) == OOD_LABEL).all()
    # the same images every time, no digit among them: patches of scikit-learn's photographs in [0, 1]
    raw = ood_images(m, (1, 28, 28))
    np.testing.assert_array_equal(raw, ood_images(m, (1, 28, 28)))
    assert raw.min() >= 0 and raw.max() <= 1 and len({x.tobytes() for x in raw}) == m
    np.testing.assert_allclose(ood_images(3, (1, 28, 28), mean=0.5, std=2.0), (raw[:3] - 0.5) / 2.0, atol=1e-6)
    with pytest.raises(ValueError, match="shift.ood must be an integer >= 1"):
        check_shift({"kind": "rotate", "levels": [30], "n": 10, "ood": 0})


def test_the_ensemble_of_seed_k_contains_the_ce_network_of_seed_k():
    runs = experiments("default")
    for s in range(5):
        ens = runs[f"ch6/ensemble/s{s}"]
        assert config_key(member_config(normalize_config(ens), 0)) == config_key(runs[f"ch6/CE/s{s}"])


def test_shift_in_a_run_scores_the_network_on_its_rotated_test_images():
    from calibcourse.study.training.config import load_data_splits

    cfg = {**TINY, "data": {"name": "mnist5k", "n_train": 100}, "model": {"name": "lenet5"}, "epochs": 1,
           "shift": SHIFT}
    r = train(cfg, progress=False)
    *_, X_test, y_test, (mean, std) = load_data_splits(cfg["data"], return_stats=True)
    fill = (-np.asarray(mean) / np.asarray(std)).reshape(-1)
    for a in SHIFT["levels"]:
        np.testing.assert_array_equal(r.labels(f"shift/{a}"), y_test[:50])
        expected = predict_logits(r.model, rotate_images(X_test[:50], a, fill))
        np.testing.assert_array_equal(r.logits(f"shift/{a}"), expected.astype(np.float32))
        assert not np.allclose(r.logits(f"shift/{a}"), r.logits("test")[:50], atol=1e-3)


def test_a_contrast_of_one_and_minus_one_is_the_paired_difference():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 3, 400)
    a = [softmax(rng.normal(size=(400, 3)) * 2, axis=1) for _ in range(4)]
    b = [softmax(rng.normal(size=(400, 3)), axis=1) for _ in range(4)]
    d = stats.paired_seeds_difference(metrics.ece, a, b, y, n_boot=50)
    c = stats.paired_seeds_contrast(metrics.ece, [a, b], (1, -1), y, n_boot=50)
    assert tuple(d[:8]) == tuple(c[:8]) and np.array_equal(d.per_seed, c.per_seed)


def test_a_difference_of_differences_over_seeds_alone_is_the_paired_t_interval():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 300)
    P = [[softmax(rng.normal(size=(300, 3)) * (1 + j), axis=1) for _ in range(5)] for j in range(4)]
    c = stats.paired_seeds_contrast(metrics.brier, P, (1, -1, -1, 1), y, n_boot=0)
    per_seed = np.array([metrics.brier(P[0][s], y) - metrics.brier(P[1][s], y)
                         - metrics.brier(P[2][s], y) + metrics.brier(P[3][s], y) for s in range(5)])
    np.testing.assert_allclose(c.per_seed, per_seed, rtol=1e-12)
    low, high = sps.t.interval(0.95, 4, loc=per_seed.mean(), scale=sps.sem(per_seed))
    np.testing.assert_allclose((c.low, c.high), (low, high), rtol=1e-9)
    with pytest.raises(ValueError, match="weights"):
        stats.paired_seeds_contrast(metrics.brier, P, (1, -1), y, n_boot=0)


# --------------------------------------------------------------------------- the letters (out of distribution)
def _raw_test_digits():
    """The clean test digits of chapter 6's default runs, back in [0, 1] (as the letters are drawn)."""
    from calibcourse.study.runs.experiments import SHIFT_DATA
    from calibcourse.study.training.config import load_data_splits

    *_, X_test, _, (mean, std) = load_data_splits(SHIFT_DATA, return_stats=True)
    return X_test * np.asarray(std).reshape(1, -1, 1, 1) + np.asarray(mean).reshape(1, -1, 1, 1)


def test_no_trivial_pixel_statistic_separates_the_letters_from_the_digits():
    """The issue's bar for a non-trivial out-of-distribution set: every trivial pixel statistic's AUROC,
    the strongest included (the saturated share, 0.81), below 0.9 (the photographs' patches reach 1.0),
    computed here with scikit-learn on the images the runs score."""
    from sklearn.metrics import roc_auc_score

    from calibcourse.study.analysis.deployment import brightness_separation
    from calibcourse.study.runs.experiments import LETTERS_OOD
    from calibcourse.study.training.shift import ood_images, ood_letters

    digits = _raw_test_digits()[:, 0].reshape(-1, 28 * 28)
    letters = ood_letters(LETTERS_OOD["n"], (1, 28, 28))[:, 0].reshape(-1, 28 * 28)
    group = np.r_[np.ones(len(digits)), np.zeros(len(letters))]
    features = {"mean intensity": lambda X: X.mean(1), "near-black fraction": lambda X: (X < 0.1).mean(1),
                "saturated fraction": lambda X: (X > 0.99).mean(1), "ink area": lambda X: (X > 0.5).mean(1)}
    found = brightness_separation(digits, letters)
    assert set(found) == set(features)
    for name, feature in features.items():
        a = roc_auc_score(group, np.r_[feature(digits), feature(letters)])
        assert found[name] == pytest.approx(max(a, 1 - a), abs=1e-12)
    assert max(found.values()) < 0.9                                   # the strongest feature too
    patches = ood_images(500, (1, 28, 28))[:, 0].reshape(-1, 28 * 28)
    assert brightness_separation(digits, patches)["near-black fraction"] > 0.99   # the set it replaces


def test_the_letters_are_drawn_like_mnist_digits():
    from calibcourse.study.training.shift import ood_letters

    X = ood_letters(60, (1, 28, 28))[:, 0]
    assert X.min() >= 0 and X.max() <= 1 and len({x.tobytes() for x in X}) == 60
    ink = X.sum(axis=(1, 2))
    rows, cols = np.arange(28)[:, None], np.arange(28)[None, :]
    cy = (X * rows).sum(axis=(1, 2)) / ink
    cx = (X * cols).sum(axis=(1, 2)) / ink
    assert np.all(np.abs(cy - 13.5) <= 0.5) and np.all(np.abs(cx - 13.5) <= 0.5)   # centred by mass, as MNIST
    on = X > 0
    height = np.array([np.ptp(np.flatnonzero(o.any(1))) + 1 for o in on])
    width = np.array([np.ptp(np.flatnonzero(o.any(0))) + 1 for o in on])
    assert np.all(np.maximum(height, width) <= 21) and np.all(np.maximum(height, width) >= 19)   # a 20-pixel box
    np.testing.assert_allclose(ood_letters(3, (1, 28, 28), mean=0.5, std=2.0)[:, 0], (X[:3] - 0.5) / 2.0, atol=1e-6)
    assert ood_letters(2, (3, 28, 28)).shape == (2, 3, 28, 28)


@pytest.mark.parametrize("bad, message", [
    ({"kind": "fonts", "n": 10}, "ood.kind"),
    ({"kind": "letters", "n": 0}, "ood.n"),
    ({"kind": "letters"}, "ood must be"),
])
def test_a_bad_ood_section_is_refused_by_name(bad, message):
    with pytest.raises(ValueError, match=message):
        normalize_config({**TINY, "ood": bad})
    with pytest.raises(ValueError, match="not both"):
        normalize_config({**TINY, "ood": {"kind": "letters", "n": 5}, "shift": {**SHIFT, "ood": 5}})


def test_the_letters_runs_store_the_letters_logits():
    from calibcourse.study.training.config import load_data_splits
    from calibcourse.study.training.shift import OOD_LABEL, OOD_SPLIT, ood_letters

    cfg = {**TINY, "data": {"name": "mnist5k", "n_train": 100}, "model": {"name": "lenet5"}, "epochs": 1,
           "ood": {"kind": "letters", "n": 20}}
    r = train(cfg, progress=False)
    *_, (mean, std) = load_data_splits(cfg["data"], return_stats=True)
    np.testing.assert_array_equal(r.labels(OOD_SPLIT), np.full(20, OOD_LABEL))
    expected = predict_logits(r.model, ood_letters(20, (1, 28, 28), mean, std))
    np.testing.assert_array_equal(r.logits(OOD_SPLIT), expected.astype(np.float32))
    assert not any(k.startswith("shift/") for k in r.outputs)
    names = experiments("default")
    assert {f"ch6/letters/{m}/s9" for m in ("CE", "ensemble", "dropout", "focal")} <= set(names)
    # the recipe of the runs under shift, with the letters in place of the rotations
    base = {k: v for k, v in names["ch6/CE/s3"].items() if k != "shift"}
    assert {k: v for k, v in names["ch6/letters/CE/s3"].items() if k != "ood"} == base

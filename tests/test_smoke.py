"""calibcourse.tools.smoke: small files in the real formats, and full configs trained on them for a batch."""
import gzip

import numpy as np
import pytest

from calibcourse.study.runs import cache as cachemod
from calibcourse.study.runs.experiments import experiments
from calibcourse.study.training import downloads as DL
from calibcourse.tools import smoke as S


def test_fake_data_are_read_by_the_real_loaders(tmp_path):
    root = S.write_fake_data(tmp_path, sizes={"mnist": (30, 20)})
    raw = tmp_path / "MNIST" / "raw"
    assert sorted(p.name for p in raw.iterdir()) == sorted(f"{f}.gz" for f in DL._MNIST_FILES)
    header = gzip.decompress((raw / "train-images-idx3-ubyte.gz").read_bytes())[:16]
    assert header == bytes.fromhex("00000803") + (30).to_bytes(4, "big") + (28).to_bytes(4, "big") * 2
    X, y, Xt, yt = DL.load_full("mnist", root)  # the gzipped files, as MNIST is distributed
    assert X.shape == (30, 1, 28, 28) and Xt.shape == (20, 1, 28, 28) and np.bincount(y).tolist() == [3] * 10
    for name, (n_train, n_test) in (("cifar10", S.SIZES["cifar10"]), ("cifar100", S.SIZES["cifar100"])):
        DL.check_available(name, root)
        X, y, Xt, yt = DL.load_full(name, root, verify=False)
        k = 10 if name == "cifar10" else 100
        assert X.shape == (n_train, 3, 32, 32) and len(yt) == n_test
        counts = np.bincount(y, minlength=k)
        assert counts.min() >= 1  # every class in the training split
        if k == 100:  # 5 of each: the 10 % validation split holds every class
            assert counts.tolist() == [5] * 100
        else:  # mostly cats and birds (chapter 3's two classes)
            assert counts[2] + counts[3] > 0.7 * n_train
        # images of a class are its template plus a little noise: far closer to each other than to another class
        a, b = X[y == y[0]][:2]
        assert np.abs(a - b).max() <= 25 / 255 + 1e-6 and np.abs(a - X[y != y[0]][0]).mean() > 0.2


@pytest.mark.parametrize("name", ["ch2/depth/level1/s0", "ch3/frozen_head", "ch3/nine/small_sigmoid_overfit",
                                  "ch6/dropout/s0"])
def test_full_configs_train_for_one_batch_on_the_small_files(tmp_path, monkeypatch, name):
    S.write_fake_data(tmp_path / "data")
    S._write_fake_weights(tmp_path / "data" / "weights")
    for var, value in (("CALIBCOURSE_SMOKE", S.SMOKE_CAPS), ("CALIBCOURSE_DATA", str(tmp_path / "data"))):
        monkeypatch.setenv(var, value)
    cfg = experiments("full")[name]
    cache = cachemod.Cache(tmp_path / "cache")
    result = cache.get_or_train(cfg, progress=False)
    assert cache.keys() == [cachemod.config_key(cfg)] and len(result.history) == 1
    assert result.info["smoke"].startswith("1 epochs of at most 1 batches of at most 4 samples")
    n_test = len(result.labels("test"))
    assert result.logits("test").shape[0] == n_test > 0

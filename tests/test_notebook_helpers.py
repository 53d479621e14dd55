"""Helpers the chapters call: the profile banner, glue of numpy values, labels read from configs."""
import numpy as np
import pytest

from calibcourse.study.course import notebook
from calibcourse.study.runs import experiments as E


def test_glue_value_converts_numpy_scalars_and_booleans(monkeypatch):
    seen = {}
    import myst_nb

    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: seen.update({name: value}))
    assert notebook.glue_value("a", np.float64(1.5)) == 1.5 and type(seen["a"]) is float
    assert notebook.glue_value("b", np.bool_(True)) == "yes" and seen["b"] == "yes"
    assert notebook.glue_value("c", False) == "no"
    assert notebook.glue_value("d", np.int64(3)) == 3 and type(seen["d"]) is int


def test_setup_rejects_unknown_profile():
    with pytest.raises(ValueError, match="profile must be one of"):
        notebook.setup("huge", data="x")


def test_labels_and_data_summary_come_from_the_configs():
    # one name, the model of each profile: the name says what varies, the label what was trained
    assert E.model_label("ch2/model/small", "default") == "LeNet-5"
    assert E.model_label("ch2/model/large", "default") == "ResNet-20"
    assert E.model_label("ch2/model/large", "full") == "ResNet-110"
    assert E.model_label("ch2/depth/level3/s0", "default") == "MLP 4x256"
    assert E.model_label("ch2/depth/level3/s0", "full") == "ResNet-56"
    assert E.data_label("ch2/depth/level3/s0", "default") == "MNIST-1D"
    assert E.data_label("ch2/depth/level3/s0", "full") == "CIFAR-100"
    s = E.data_summary(["ch3/"], "default")
    assert "9 vs rest" in s and "classes 4 vs 9" in s
    assert "CIFAR-10" in E.data_summary(["ch5/"], "full")
    with pytest.raises(KeyError, match="no experiment"):
        E.run("ch9/none", "ci")
    with pytest.raises(ValueError, match="profile must be one of"):
        E.experiments("huge")

"""What every chapter notebook does first (profile banner, seeds, figure style), and glue for its prose."""
from __future__ import annotations

import random

import numpy as np

from calibcourse.study.analysis.glue import glue_value
from calibcourse.study.runs.profiles import BANNERS, check_profile

__all__ = ["setup", "glue_value", "budget", "BUDGETS"]


#: per-profile sizes of the chapters' computations, in one place (``ci`` only checks that the
#: code runs); ``n_boot``: bootstrap resamples behind every interval
BUDGETS = {
    "ci": {"n_boot": 50, "n_boot_seeds": 20, "n_reps": 20, "cal_sizes": (100, 1000), "sample_sizes": (100, 1000),
           "n_resplits": 4, "lab_epochs": 2, "lab_split_sizes": (500, 300),
           "odir_lambdas": ()},
    "default": {"n_boot": 1000, "n_boot_seeds": 300, "n_reps": 200, "cal_sizes": (50, 100, 200, 500, 1000),
                "sample_sizes": (100, 300, 1000, 3000, 10000), "n_resplits": 20, "lab_epochs": 30,
                "lab_split_sizes": (None, None), "odir_lambdas": (0.01, 0.1, 1, 10)},
    "full": {"n_boot": 2000, "n_boot_seeds": 1000, "n_reps": 500, "cal_sizes": (50, 100, 200, 500, 1000, 5000),
             "sample_sizes": (100, 300, 1000, 3000, 10000, 30000), "n_resplits": 20, "lab_epochs": 30,
             "lab_split_sizes": (None, None), "odir_lambdas": (0.01, 0.1, 1, 10)},
}


def budget(profile: str, name: str):
    """The size ``name`` of :data:`BUDGETS` for ``profile``.

    Parameters
    ----------
    profile : {"ci", "default", "full"}
        The build's profile.
    name : str
        A key of :data:`BUDGETS`: ``"n_boot"`` (bootstrap resamples behind every interval),
        ``"n_boot_seeds"`` (resamples behind an interval over seeds, which uses only their variance),
        ``"n_reps"`` (replications of a simulation), ``"cal_sizes"`` (calibration-set sizes),
        ``"sample_sizes"`` (test-set sizes of a simulation), ``"n_resplits"`` (random re-splits in
        Lab 2), ``"lab_epochs"`` (training epochs in Lab 4), ``"lab_split_sizes"`` (training and
        test samples Lab 1 keeps of its split; None: all), ``"odir_lambdas"`` (the penalties of
        chapter 4's matrix-scaling exercise: each is two fits of up to 10,100 parameters on CIFAR-100;
        none in `ci` and the smoke run, where they took minutes on untrained logits).

    Returns
    -------
    int or tuple
        The size.

    Examples
    --------
    >>> budget("default", "n_boot")
    1000
    """
    check_profile(profile)
    if name not in BUDGETS[profile]:
        raise KeyError(f"no budget {name!r}; known: {', '.join(BUDGETS[profile])}")
    import os

    if os.environ.get("CALIBCOURSE_SMOKE"):  # a smoke run (calibcourse.tools.smoke): only checks that pages execute
        return BUDGETS["ci"][name]
    return BUDGETS[profile][name]


def setup(profile: str, data: str, seed: int = 0, edition: str = "instructor"):
    """Seed numpy/torch/random, set the figure style, and state the profile and data on the page.

    It also keeps the toolkit's warning that an unregularized vector or matrix scaling did not converge
    off the pages (chapter 4 shows matrix scaling overfitting on purpose).

    Parameters
    ----------
    profile : str
        One of :data:`calibcourse.study.runs.profiles.PROFILES`.
    data : str
        The data the page uses, for the banner (e.g. :func:`calibcourse.study.runs.experiments.data_summary`).
    seed : int, default=0
        Seed of the resampling.
    edition : str, default="instructor"
        The edition, for the banner.

    Returns
    -------
    None
        The banner is displayed in the notebook.

    Examples
    --------
    >>> setup("huge", data="none")
    Traceback (most recent call last):
    ...
    ValueError: profile must be one of ci, default, full; got 'huge'
    """
    check_profile(profile)
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    # chapter 4 fits unregularized matrix scaling with 100 classes on a few hundred samples on purpose (it
    # overfits, and L-BFGS stops at its limit): the toolkit's warning says so to a user, not on every page
    warnings.filterwarnings("ignore", message=r"(vector|matrix) scaling (did not converge|drove)",
                            category=ConvergenceWarning)
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch

        torch.manual_seed(seed)
    except ImportError:  # pragma: no cover
        pass
    import matplotlib.pyplot as plt

    try:  # figures inline in the executed notebook, whatever MPLBACKEND says
        from IPython import get_ipython

        if get_ipython() is not None:
            get_ipython().run_line_magic("matplotlib", "inline")
    except Exception:  # pragma: no cover
        pass
    plt.rcParams.update({"figure.dpi": 110, "savefig.dpi": 110, "axes.spines.top": False,
                         "axes.spines.right": False, "font.size": 9})
    from html import escape

    from IPython.display import display

    title, what = BANNERS[profile]
    body = f"{what} Data: {data}." + (" Instructor edition." if edition == "instructor" else "")
    # the HTML book shows the note box; the PDF (LaTeX has no HTML) the same words as markdown
    display({"text/html": f'<div class="admonition note"><p class="admonition-title">{escape(title)}</p>'
                          f"<p>{escape(body)}</p></div>",
             "text/markdown": f"*{title}. {body}*",
             "text/plain": f"{title}. {body}"}, raw=True)

"""What every chapter notebook does first: profile banner, seeds, figure style."""
from __future__ import annotations

import random

import numpy as np

PROFILE_TEXT = {
    "ci": "smoke-test profile `ci`: tiny runs that only check the code executes; numbers are not meaningful",
    "default": "profile `default`: embedded data sets, CPU-sized models",
    "full": "profile `full`: full MNIST / CIFAR data sets and the papers' architectures",
}


#: per-profile sizes of the chapters' computations, in one place (``ci`` only checks that the
#: code runs); ``n_boot``: bootstrap resamples behind every interval
BUDGETS = {
    "ci": {"n_boot": 50, "n_reps": 20, "cal_sizes": (100, 1000)},
    "default": {"n_boot": 1000, "n_reps": 200, "cal_sizes": (50, 100, 200, 500, 1000)},
    "full": {"n_boot": 2000, "n_reps": 500, "cal_sizes": (50, 100, 200, 500, 1000, 5000)},
}


def budget(profile: str, name: str):
    """The size ``name`` of :data:`BUDGETS` for ``profile`` (e.g. ``budget(profile, "n_boot")``)."""
    if profile not in BUDGETS:
        raise ValueError(f"profile must be one of {', '.join(BUDGETS)}; got {profile!r}")
    if name not in BUDGETS[profile]:
        raise KeyError(f"no budget {name!r}; known: {', '.join(BUDGETS[profile])}")
    return BUDGETS[profile][name]


def setup(profile: str, data: str, seed: int = 0, edition: str = "instructor"):
    """Seed numpy/torch/random, set the figure style, and state the profile and data on the page."""
    if profile not in PROFILE_TEXT:
        raise ValueError(f"profile must be one of {', '.join(PROFILE_TEXT)}; got {profile!r}")
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

    from IPython.display import HTML, display

    display(HTML(f'<div class="admonition note"><p class="admonition-title">Built with '
                 f'{escape(PROFILE_TEXT[profile]).replace("`", "")}</p>'
                 f"<p>Data: {escape(data)}. Edition: {escape(edition)}.</p></div>"))


def glue_value(name: str, value, fmt: str | None = None):
    """``myst_nb.glue`` a number or string for use in prose as ``{glue:text}`name:.2f```.

    numpy scalars are converted to Python numbers first (myst-nb cannot format
    their ``repr``); nothing is displayed in the cell.
    """
    from myst_nb import glue

    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        value = "yes" if value else "no"
    glue(name, value, display=False)
    return value

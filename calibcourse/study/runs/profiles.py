"""The profiles of the book, in one place: which runs, on which data, at which scale.

Every part of the package that takes a ``profile`` (the experiments, the build,
the notebook banner, the command line) reads the names from :data:`PROFILES`.
"""
from __future__ import annotations

__all__ = ["PROFILES", "DESCRIPTIONS", "BANNERS", "check_profile"]

#: What each profile is, as the banner at the top of every page says it.
DESCRIPTIONS = {
    "ci": "smoke-test profile `ci`: tiny runs that only check the code executes; numbers are not meaningful",
    "default": "profile `default`: embedded data sets, CPU-sized models",
    "full": "profile `full`: full MNIST / CIFAR data sets and the papers' architectures",
}
#: What the banner at the top of every page tells its reader: (title, sentence), in a student's words
#: (no profile name: a student reads "the numbers come from these runs", not a build switch).
BANNERS = {
    "ci": ("Numbers from tiny smoke-test runs", "They only check that the code executes; the numbers mean nothing."),
    "default": ("Numbers from the training runs stored with the course (default scale)",
                "Data sets that ship with Python packages, models sized for a laptop's CPU."),
    "full": ("Numbers from full-scale training runs",
             "The full MNIST and CIFAR data sets and the papers' architectures."),
}
#: The profile names, smallest first.
PROFILES = tuple(DESCRIPTIONS)


def check_profile(profile) -> str:
    """Return ``profile`` if it names a profile, else raise a ``ValueError`` listing them.

    Parameters
    ----------
    profile : str
        One of :data:`calibcourse.study.runs.profiles.PROFILES`.

    Returns
    -------
    str
        ``profile``.

    Examples
    --------
    >>> check_profile("ci")
    'ci'
    >>> check_profile("huge")
    Traceback (most recent call last):
    ...
    ValueError: profile must be one of ci, default, full; got 'huge'
    """
    if profile not in DESCRIPTIONS:
        raise ValueError(f"profile must be one of {', '.join(PROFILES)}; got {profile!r}")
    return profile

"""Test sets under a distribution shift you can dial (chapter 6): the test images rotated.

A run config's optional ``shift`` section, e.g. ``{"kind": "rotate", "levels": [15, 30, 45], "n": 500}``,
asks for the first ``n`` test images rotated by each angle (degrees), as Ovadia et al. (2019)
rotate MNIST: the same digits at every angle, so that measures at two angles are paired sample
by sample. The run stores them beside its test split as ``"shift/<angle>"``
(``result.logits("shift/30")``, ``result.labels("shift/30")``); the clean test set stays ``"test"``.
An optional ``"ood": m`` adds ``m`` out-of-distribution images (:func:`ood_images`: patches of the
two photographs scikit-learn ships, no digit in them), stored as the split ``"ood"`` with the label
:data:`OOD_LABEL`. Those patches turned out to be separable from the digits by their brightness alone
(their mean intensity is three times the digits'), so they test little; a run config's optional
top-level ``ood`` section, ``{"kind": "letters", "n": m}`` (:func:`check_ood`), stores ``m`` images of
:func:`ood_letters` instead, letters A-J drawn like MNIST digits (the Not-MNIST idea), under the same
split name.

Rotation is :func:`scipy.ndimage.rotate` about the image centre, without resizing
(``reshape=False``), with linear interpolation (``order=1``), deterministic. Images are rotated
after normalization with the normalized black pixel as the fill: linear interpolation commutes
with the per-channel affine normalization, so this equals normalizing the rotated raw images.
"""
from __future__ import annotations

import functools

import numpy as np

from calibcourse.calibration._validation import check_int, is_int

__all__ = ["LETTERS", "LETTER_FONTS", "OOD_KINDS", "OOD_LABEL", "OOD_SPLIT", "SHIFT_KINDS", "check_ood", "check_shift",
           "ood_images", "ood_letters", "ood_set", "rotate_images", "shifted_sets", "split_name", "shift_levels"]

#: the kinds of shift a config may ask for
SHIFT_KINDS = ("rotate",)
#: the split the out-of-distribution images are stored under, and their label (no class of the task)
OOD_SPLIT = "ood"
OOD_LABEL = -1
#: the out-of-distribution images' seed: the same images for every run, so that runs pair on them
OOD_SEED = 0
#: the kinds of out-of-distribution images a config's ``ood`` section may ask for
OOD_KINDS = ("photos", "letters")
#: Not-MNIST's ten letters (Bulatov 2011), which :func:`ood_letters` draws
LETTERS = "ABCDEFGHIJ"
#: the fonts :func:`ood_letters` draws them in: every roman, bold and italic text face matplotlib ships
#: (DejaVu, STIX and Computer Modern), so that nothing is downloaded
LETTER_FONTS = ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSans-Oblique.ttf", "DejaVuSans-BoldOblique.ttf",
                "DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf", "DejaVuSerif.ttf", "DejaVuSerif-Bold.ttf",
                "DejaVuSerif-Italic.ttf", "DejaVuSerif-BoldItalic.ttf", "STIXGeneral.ttf", "STIXGeneralBol.ttf",
                "STIXGeneralItalic.ttf", "STIXGeneralBolIta.ttf", "cmr10.ttf", "cmss10.ttf", "cmti10.ttf",
                "cmtt10.ttf", "cmb10.ttf")


def check_shift(spec) -> dict:
    """Validate a config's ``shift`` section; return it.

    Parameters
    ----------
    spec : dict
        ``{"kind": "rotate", "levels": [angles in degrees, distinct, > 0], "n": images per angle >= 1}``,
        optionally with ``"ood": m``, the out-of-distribution images to store (an integer >= 1).

    Returns
    -------
    dict
        ``spec`` itself.

    Raises
    ------
    ValueError
        A missing or unknown key, or a value out of range, named in the message.

    Examples
    --------
    >>> check_shift({"kind": "rotate", "levels": [15, 30], "n": 100})["levels"]
    [15, 30]
    >>> check_shift({"kind": "rotate", "levels": [30, 30], "n": 100})
    Traceback (most recent call last):
        ...
    ValueError: shift.levels must be distinct angles in degrees, each in (0, 360), increasing; got [30, 30]
    """
    if not isinstance(spec, dict) or not {"kind", "levels", "n"} <= set(spec) <= {"kind", "levels", "n", "ood"}:
        raise ValueError(f'shift must be a dict {{"kind": "rotate", "levels": [15, 30, ...], "n": 500}} '
                         f'(optionally with "ood": m); got {spec!r}')
    if spec["kind"] not in SHIFT_KINDS:
        raise ValueError(f"shift.kind must be one of {', '.join(SHIFT_KINDS)}; got {spec['kind']!r}")
    levels = spec["levels"]
    if (not isinstance(levels, list) or not levels
            or not all(is_int(a, 1, 359) for a in levels)
            or levels != sorted(set(levels))):
        raise ValueError(f"shift.levels must be distinct angles in degrees, each in (0, 360), increasing; "
                         f"got {levels!r}")
    for key in ("n", "ood"):
        n = spec.get(key, 1)
        check_int(n, f"shift.{key}", low=1)
    return spec


def split_name(level) -> str:
    """The split a shift level is stored under: ``"shift/<level>"``.

    Parameters
    ----------
    level : int or float
        The shift's intensity (an angle in degrees for ``rotate``).

    Returns
    -------
    str
        The split's name for :meth:`calibcourse.study.training.results.RunResult.logits`.

    Examples
    --------
    >>> split_name(30)
    'shift/30'
    """
    return f"shift/{level}"


def shift_levels(config: dict) -> list:
    """The shift levels (angles) a run config stores, smallest first; ``[]`` without ``shift``.

    Parameters
    ----------
    config : dict
        A run config.

    Returns
    -------
    list
        Its levels.

    Examples
    --------
    >>> shift_levels({"shift": {"kind": "rotate", "levels": [15, 30], "n": 10}}), shift_levels({})
    ([15, 30], [])
    """
    return list((config.get("shift") or {}).get("levels", []))


def rotate_images(X, angle: float, fill=0.0) -> np.ndarray:
    """Images ``X`` (n, C, H, W) rotated by ``angle`` degrees (counter-clockwise) about their centre.

    Parameters
    ----------
    X : array_like of shape (n, C, H, W)
        The images.
    angle : float
        Degrees; 0 returns a copy of ``X``.
    fill : float or array_like of shape (C,), default=0
        The value of each channel outside the original image (the black pixel; normalized images
        need the normalized black, ``-mean / std``).

    Returns
    -------
    numpy.ndarray
        The rotated images, same shape and dtype as ``X``.

    Examples
    --------
    >>> X = np.zeros((1, 1, 5, 5), dtype=np.float32); X[0, 0, 0, 2] = 1.0   # a dot at the top centre
    >>> np.argwhere(rotate_images(X, 90)[0, 0] == 1.0).tolist()           # now at the left centre
    [[2, 0]]
    >>> bool(np.array_equal(rotate_images(X, 0), X)), rotate_images(X, 90).dtype
    (True, dtype('float32'))
    """
    from scipy import ndimage

    X = np.asarray(X)
    if X.ndim != 4:
        raise ValueError(f"X must be images of shape (n, C, H, W); got shape {X.shape}")
    fill = np.broadcast_to(np.asarray(fill, dtype=np.float64).reshape(-1), (X.shape[1],))
    if angle == 0:
        return X.copy()
    out = np.empty_like(X)
    for c in range(X.shape[1]):
        # axes (2, 1) of (n, H, W): rows are y downwards, so this turns the picture counter-clockwise
        out[:, c] = ndimage.rotate(X[:, c].astype(np.float64), angle, axes=(2, 1), reshape=False, order=1,
                                   mode="constant", cval=float(fill[c]))
    return out


def ood_images(n: int, shape, mean=0.0, std=1.0, seed: int = OOD_SEED) -> np.ndarray:
    """``n`` out-of-distribution images: patches of the two photographs scikit-learn ships.

    Each image is a square patch, 4 times the target side, cut at a random place of
    :func:`sklearn.datasets.load_sample_images`' "china.jpg" or "flower.jpg" (a temple and a
    flower), averaged over 4 x 4 blocks down to ``shape``, in grey (mean of the colour channels)
    for one channel or in colour for three, scaled to [0, 1] like the digits, then normalized
    with the digits' ``mean`` and ``std``. No patch holds a digit: inputs of no class of the task,
    from data that ships with the packages (no download).

    Parameters
    ----------
    n : int
        Number of images (>= 1).
    shape : tuple of int
        ``(C, H, W)`` of one image, C 1 or 3, ``4 * H`` and ``4 * W`` at most the photographs'
        427 x 640.
    mean, std : float or array_like of shape (C,), default=0, 1
        The normalization of the network's inputs (the training split's statistics).
    seed : int, default=OOD_SEED
        Where the patches are cut.

    Returns
    -------
    numpy.ndarray of shape (n, C, H, W), float32

    Examples
    --------
    >>> X = ood_images(5, (1, 28, 28))
    >>> X.shape, X.dtype, bool(0 <= X.min() and X.max() <= 1)
    ((5, 1, 28, 28), dtype('float32'), True)
    >>> bool(np.array_equal(ood_images(5, (1, 28, 28)), X))   # the same images every time
    True
    """
    from sklearn.datasets import load_sample_images

    check_int(n, "n", low=1)
    c, h, w = (int(v) for v in shape)
    if c not in (1, 3):
        raise ValueError(f"shape must be (C, H, W) with C 1 or 3; got {tuple(shape)}")
    photos = [np.asarray(p, dtype=np.float64) / 255.0 for p in load_sample_images().images]
    if any(4 * h > p.shape[0] or 4 * w > p.shape[1] for p in photos):
        raise ValueError(f"shape {tuple(shape)} needs patches larger than the photographs (427 x 640)")
    rng = np.random.default_rng(seed)
    out = np.empty((n, c, h, w))
    for i in range(n):
        p = photos[rng.integers(len(photos))]
        top, left = rng.integers(p.shape[0] - 4 * h + 1), rng.integers(p.shape[1] - 4 * w + 1)
        patch = p[top:top + 4 * h, left:left + 4 * w].reshape(h, 4, w, 4, 3).mean(axis=(1, 3))
        out[i] = patch.mean(axis=2)[None] if c == 1 else patch.transpose(2, 0, 1)
    mean = np.broadcast_to(np.asarray(mean, dtype=np.float64).reshape(-1), (c,)).reshape(1, c, 1, 1)
    std = np.broadcast_to(np.asarray(std, dtype=np.float64).reshape(-1), (c,)).reshape(1, c, 1, 1)
    return ((out - mean) / std).astype(np.float32)


def check_ood(spec) -> dict:
    """Validate a config's ``ood`` section; return it.

    Parameters
    ----------
    spec : dict
        ``{"kind": one of OOD_KINDS, "n": images >= 1}``: which out-of-distribution images a run
        scores and stores as the split :data:`OOD_SPLIT` (:func:`ood_set`).

    Returns
    -------
    dict
        ``spec`` itself.

    Raises
    ------
    ValueError
        A missing or unknown key, or a value out of range, named in the message.

    Examples
    --------
    >>> check_ood({"kind": "letters", "n": 500})["kind"]
    'letters'
    >>> check_ood({"kind": "fonts", "n": 500})
    Traceback (most recent call last):
        ...
    ValueError: ood.kind must be one of photos, letters; got 'fonts'
    """
    if not isinstance(spec, dict) or set(spec) != {"kind", "n"}:
        raise ValueError(f'ood must be a dict {{"kind": "letters", "n": 500}}; got {spec!r}')
    if spec["kind"] not in OOD_KINDS:
        raise ValueError(f"ood.kind must be one of {', '.join(OOD_KINDS)}; got {spec['kind']!r}")
    check_int(spec["n"], "ood.n", low=1)
    return spec


def _letter_font(name: str):
    import os

    import matplotlib
    from matplotlib.font_manager import FontProperties

    return FontProperties(fname=os.path.join(matplotlib.get_data_path(), "fonts", "ttf", name))


@functools.lru_cache(maxsize=2)
def _letter_pixels(n: int, h: int, seed: int, up: int) -> np.ndarray:
    """:func:`ood_letters`' ``n`` images of side ``h`` in [0, 1], before normalization (read-only).

    Rendering takes about 2 ms an image: a process that evaluates many networks on the same
    letters (chapter 6's runs, a smoke run) draws them once."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import PathPatch
    from matplotlib.textpath import TextPath
    from matplotlib.transforms import Affine2D
    from scipy import ndimage

    side, box = h * up, 20 / 28 * h * up
    fig = Figure(figsize=(1, 1), dpi=side)
    canvas = FigureCanvasAgg(fig)
    fig.patch.set_facecolor("black")
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    ax.set(xlim=(0, side), ylim=(side, 0))
    w = h
    fonts = [_letter_font(f) for f in LETTER_FONTS]
    rng = np.random.default_rng(seed)
    out = np.empty((n, h, w))
    for i in range(n):
        letter, font = LETTERS[rng.integers(len(LETTERS))], fonts[rng.integers(len(fonts))]
        turn, shear, thicken = rng.uniform(-15, 15), rng.uniform(-0.2, 0.2), rng.uniform(0, 1.5)
        path = TextPath((0, 0), letter, size=100, prop=font)
        t = Affine2D().scale(1, -1).skew(np.arctan(shear), 0).rotate_deg(turn)   # y down, as in an image
        ext = t.transform_path(path).get_extents()   # the outline's own box (not its curves' control points)
        lo, hi = np.array([ext.x0, ext.y0]), np.array([ext.x1, ext.y1])
        # the thickened outline (half its width outside the letter) fits the box too, as a digit's strokes do
        t += Affine2D().translate(*(-(lo + hi) / 2)).scale((box - thicken * up) / max(hi - lo)).translate(
            side / 2, side / 2)
        for p in list(ax.patches):
            p.remove()
        # a line width is in points: 72 per inch, and the figure is one inch of `side` pixels
        ax.add_patch(PathPatch(t.transform_path(path), facecolor="white", edgecolor="white",
                               linewidth=thicken * up * 72 / side, joinstyle="round"))
        canvas.draw()
        img = np.asarray(canvas.buffer_rgba())[..., 0].astype(np.float64) / 255.0
        img = img.reshape(h, up, w, up).mean(axis=(1, 3))
        cy, cx = ndimage.center_of_mass(img)
        out[i] = ndimage.shift(img, (round((h - 1) / 2 - cy), round((w - 1) / 2 - cx)), order=0, cval=0.0)
    out.setflags(write=False)
    return out


def ood_letters(n: int, shape, mean=0.0, std=1.0, seed: int = OOD_SEED, up: int = 4) -> np.ndarray:
    """``n`` out-of-distribution images: the letters A-J drawn as MNIST draws its digits (Not-MNIST's idea).

    Each image is one of :data:`LETTERS` in one of :data:`LETTER_FONTS` (both drawn at random),
    slanted by a shear of up to 0.2 and turned by up to 15 degrees either way, its outline thickened by
    up to 1.5 pixels, then laid out as MNIST lays out a digit: white on black, scaled to fit a box of
    20/28 of the image's side, drawn ``up`` times finer and averaged down (anti-aliasing), and moved
    so that its centre of mass sits at the image's centre. The ink per image is then close to a
    digit's, so that brightness alone does not tell the letters from the digits (unlike
    :func:`ood_images`' photographs). Rendered with matplotlib's Agg canvas from the fonts
    matplotlib ships: no download, the same images for every run. Scaled to [0, 1] like the digits,
    then normalized with the digits' ``mean`` and ``std``.

    Parameters
    ----------
    n : int
        Number of images (>= 1).
    shape : tuple of int
        ``(C, H, W)`` of one image: square (``H == W``, at least 8), C 1 or 3 (grey, repeated).
    mean, std : float or array_like of shape (C,), default=0, 1
        The normalization of the network's inputs (the training split's statistics).
    seed : int, default=OOD_SEED
        Which letters, fonts and distortions.
    up : int, default=4
        The finer drawing's factor.

    Returns
    -------
    numpy.ndarray of shape (n, C, H, W), float32

    Examples
    --------
    >>> X = ood_letters(4, (1, 28, 28))
    >>> X.shape, X.dtype, bool(0 <= X.min() and X.max() <= 1)
    ((4, 1, 28, 28), dtype('float32'), True)
    >>> bool(np.array_equal(ood_letters(4, (1, 28, 28)), X))   # the same images every time
    True
    >>> bool(np.all(X[:, :, 0, :] == 0))                          # black around the letter
    True
    """
    check_int(n, "n", low=1)
    check_int(up, "up", low=1)
    c, h, w = (int(v) for v in shape)
    if c not in (1, 3) or h != w or h < 8:
        raise ValueError(f"shape must be (C, H, W) with C 1 or 3 and H == W >= 8; got {tuple(shape)}")
    out = _letter_pixels(n, h, int(seed), up)
    out = np.repeat(out[:, None], c, axis=1)
    mean = np.broadcast_to(np.asarray(mean, dtype=np.float64).reshape(-1), (c,)).reshape(1, c, 1, 1)
    std = np.broadcast_to(np.asarray(std, dtype=np.float64).reshape(-1), (c,)).reshape(1, c, 1, 1)
    return ((out - mean) / std).astype(np.float32)


def ood_set(spec: dict, shape, mean=0.0, std=1.0):
    """The out-of-distribution images and labels a config's ``ood`` section asks for.

    Parameters
    ----------
    spec : dict
        The ``ood`` section (:func:`check_ood`).
    shape : tuple of int
        ``(C, H, W)`` of one image.
    mean, std : float or array_like of shape (C,), default=0, 1
        The normalization of the network's inputs.

    Returns
    -------
    images : numpy.ndarray of shape (n, C, H, W), float32
        :func:`ood_letters` or :func:`ood_images`.
    labels : numpy.ndarray of shape (n,)
        :data:`OOD_LABEL` (no class of the task).

    Examples
    --------
    >>> X, y = ood_set({"kind": "letters", "n": 3}, (1, 28, 28))
    >>> X.shape, y.tolist()
    ((3, 1, 28, 28), [-1, -1, -1])
    """
    check_ood(spec)
    make = ood_letters if spec["kind"] == "letters" else ood_images
    return make(spec["n"], shape, mean, std), np.full(spec["n"], OOD_LABEL)


def shifted_sets(X_test, y_test, spec: dict, fill=0.0) -> dict:
    """The shifted test sets a ``shift`` section asks for: ``{"shift/<angle>": (X, y)}``.

    The first ``min(n, len(y_test))`` test images, rotated by each angle; their labels are the
    test labels (a rotated digit keeps its class).

    Parameters
    ----------
    X_test : array_like of shape (n, C, H, W)
        The (normalized) test images.
    y_test : array_like of shape (n,)
        Their labels.
    spec : dict
        The config's ``shift`` section (:func:`check_shift`).
    fill : float or array_like of shape (C,), default=0
        The (normalized) black pixel, as in :func:`rotate_images`.

    Returns
    -------
    dict
        ``{split name: (images, labels)}``, angles in increasing order.

    Examples
    --------
    >>> X = np.arange(2 * 16, dtype=np.float32).reshape(2, 1, 4, 4); y = np.array([3, 7])
    >>> sets = shifted_sets(X, y, {"kind": "rotate", "levels": [90, 180], "n": 1})
    >>> list(sets), sets["shift/90"][0].shape, sets["shift/180"][1].tolist()
    (['shift/90', 'shift/180'], (1, 1, 4, 4), [3])
    >>> bool(np.array_equal(sets["shift/180"][0][0, 0], X[0, 0, ::-1, ::-1]))   # 180 degrees: both axes flipped
    True
    """
    check_shift(spec)
    X_test, y_test = np.asarray(X_test), np.asarray(y_test)
    if len(X_test) != len(y_test):
        raise ValueError(f"X_test and y_test must have the same length; got {len(X_test)} and {len(y_test)}")
    k = min(spec["n"], len(y_test))
    return {split_name(a): (rotate_images(X_test[:k], a, fill), y_test[:k].copy()) for a in spec["levels"]}

"""What each claim reads, for the registration check (:mod:`calibcourse.tools.registration`).

One entry per claim id: the run names of the ``default`` profile its test reads (``fnmatch``
patterns; the chapters are left untouched), and where the history needs help, the text that
declares it or the commit where it was first decided on runs it no longer reads. A claim whose
numbers come from a simulation the page runs has no runs (``()``). Every claim the book declares
must have an entry (the build says which lack one), and every entry a claim.

A claim is registered when the commit that first holds its declaration is older than the first of
its runs; see :mod:`calibcourse.tools.registration` for the whole rule and
``book/guide_contributors.md`` for how to add a claim.
"""
from __future__ import annotations

from typing import NamedTuple

__all__ = ["Reads", "CLAIM_READS", "CHOICES", "CHOICE_CAVEATS", "SANITY_CHECKS", "RETIRED", "NOT_INFORMATIVE"]


class Reads(NamedTuple):
    """What one claim reads.

    Attributes
    ----------
    runs : tuple of str
        ``fnmatch`` patterns of run names (``default`` profile). Runs named ``.../s<seed>`` are the
        claim's seeds: a seed counts once every pattern that has runs of it has all of them.
    anchor : str or None
        The text that declares the claim in a notebook, where it is not the id in double quotes
        (an id built by an f-string).
    earlier : str or None
        The commit (a prefix of its sha) at which the claim was first decided on runs it no longer
        reads: its test moved to other runs after a verdict.
    why : str
        Where the mapping is not obvious, what it rests on.
    path : str or None
        The module of the package that declares the claim (its id in double quotes), where a
        notebook does not: a claim registered in code before the page that tests it was written.

    Examples
    --------
    >>> r = Reads(("ch1/mlp",), earlier="cf10c026", why="an MLP the page trained itself")
    >>> r.runs, r.anchor, r.path is None
    (('ch1/mlp',), None, True)
    """

    runs: tuple = ()
    anchor: str | None = None
    earlier: str | None = None
    why: str = ""
    path: str | None = None


#: chapter 6's methods paired by seed (``ch6/<family>/s<seed>``)
_CE, _ENS, _MC, _FOCAL = (f"ch6/{f}/s*" for f in ("CE", "ensemble", "dropout", "focal"))
#: chapter 5's reference recipe (``ch5/reference/<method>/s<seed>``): the chosen γ-Nets and baselines
_REF = "ch5/reference/{}/s*"
_SECE, _CE5 = _REF.format("FLgamma-SECE (meta lr 0.0001)"), _REF.format("CE")
_METAREG = "calibcourse/study/analysis/metareg.py"
_FIRST_RECIPE = ("984a16e0", "the first recipe's runs, replaced by the reference recipe's in 7cc0f169")
_INLINE_MLP = ("cf10c026", "an MLP the page trained itself, replaced by the cached run ch1/mlp in 33566ae5")
_CROSSFIT = ("ch6/heldout/n2500/s*", "ch6/crossfit/n2500/s*")
_FIRST_CROSSFIT = ("fc722657", "the MLP's cross-fitting runs, replaced by the reference CNN's in c120cf2c")

CLAIM_READS = {
    # chapter 1: the MLP (logistic regression is fitted as the page runs); the bias claims simulate
    "ch1-capacity": Reads(("ch1/mlp",), earlier=_INLINE_MLP[0], why=_INLINE_MLP[1]),
    "ch1-capacity-error": Reads(("ch1/mlp",), earlier=_INLINE_MLP[0], why=_INLINE_MLP[1]),
    "ch1-bias-up": Reads(),
    "ch1-bias-down": Reads(),
    # chapter 2: the sweeps, over their seeds
    "ch2-depth": Reads(("ch2/depth/level*/s*",), anchor='f"ch2-{name}"'),
    "ch2-width": Reads(("ch2/width/level*/s*",), anchor='f"ch2-{name}"'),
    "ch2-batchnorm": Reads(("ch2/batchnorm/bn/s*", "ch2/batchnorm/plain/s*")),
    "ch2-weight-decay": Reads(("ch2/weight_decay/*/s*",)),
    "ch2-nll-overfit": Reads(("ch2/nll_overfit",)),
    "ch2-nll-overfit-error": Reads(("ch2/nll_overfit",)),
    "ch2-lenet": Reads(("ch2/model/small", "ch2/model/large")),
    # chapter 3: nine against the rest, the over-trained sigmoid network, the frozen-feature head
    "ch3-isotonic-ece": Reads(("ch3/nine1d/cnn",)),
    "ch3-isotonic-mce": Reads(("ch3/nine1d/cnn",)),
    "ch3-platt": Reads(("ch3/nine1d/cnn",)),
    "ch3-sigmoid-T": Reads(("ch3/nine1d/sigmoid_overfit",)),
    "ch3-sigmoid-ece": Reads(("ch3/nine1d/sigmoid_overfit",)),
    "ch3-frozen-T": Reads(("ch3/frozen_head",)),
    # chapter 4: the MNIST-1D networks of chapter 2 (in the table's order), the tutorial's recipe;
    # the bins claims simulate
    "ch4-ts-best-1": Reads(("ch2/depth/level3/s0",), anchor="ch4-ts-best-",
                           why="declared since cf10c026, its id built as f\"ch4-ts-best-{...}\""),
    "ch4-ts-best-2": Reads(("ch2/depth/level4/s0",), anchor="ch4-ts-best-",
                           why="declared since cf10c026, its id built as f\"ch4-ts-best-{...}\""),
    "ch4-recipe": Reads(("ch4/recipe",)),
    "ch4-matrix": Reads(("ch4/recipe",)),
    "ch4-bins": Reads(),
    "ch4-bins-under": Reads(),
    # chapter 5: the reference recipe's chosen γ-Nets against the baselines, paired by seed
    "ch5-sece-vs-ce": Reads((_SECE, _CE5), earlier=_FIRST_RECIPE[0], why=_FIRST_RECIPE[1]),
    "ch5-sece-vs-ts": Reads((_SECE, _CE5), earlier=_FIRST_RECIPE[0], why=_FIRST_RECIPE[1]),
    "ch5-sece-vs-focal": Reads((_SECE, _REF.format("Focal (gamma 3)")), earlier=_FIRST_RECIPE[0],
                               why=_FIRST_RECIPE[1]),
    "ch5-sece-vs-dece": Reads((_SECE, _REF.format("FLgamma-DECE (meta lr 0.001)")), earlier=_FIRST_RECIPE[0],
                              why=_FIRST_RECIPE[1]),
    "ch5-mce-vs-cedece": Reads((_SECE, _REF.format("CE-DECE (weight 0.5)")), earlier=_FIRST_RECIPE[0],
                               why=_FIRST_RECIPE[1]),
    "ch5-nll": Reads((_SECE, _CE5), earlier=_FIRST_RECIPE[0], why=_FIRST_RECIPE[1]),
    "ch5-error-cost": Reads((_SECE, _CE5), earlier=_FIRST_RECIPE[0], why=_FIRST_RECIPE[1]),
    "ch5-bins": Reads((_SECE, _CE5), earlier=_FIRST_RECIPE[0], why=_FIRST_RECIPE[1]),
    "ch5-bins-mce": Reads((_SECE, _CE5), earlier="b802cf85",
                          why=_FIRST_RECIPE[1]),
    "ch5-gamma-spread": Reads((_SECE,), earlier=_FIRST_RECIPE[0], why=_FIRST_RECIPE[1]),
    "ch5-sgd-sece-vs-ts": Reads(("ch5/diagnosis/SGD FLgamma-SECE/s*", "ch5/diagnosis/SGD CE/s*")),
    # chapter 5's registered arms, declared in the package (metareg.REGISTERED) before their runs
    "ch5-collapse-push-up": Reads(("ch5/diagnosis/bounded logged/s*",), path=_METAREG),
    "ch5-adam-reset": Reads(("ch5/diagnosis/bounded reset/s*", "ch5/diagnosis/bounded logged/s*"),
                            path=_METAREG),
    "ch5-placebo-reported-rate": Reads(("ch5/diagnosis/placebo (meta lr 0.0001)/s*",), path=_METAREG,
                                       why="the new arm's runs; its comparator, FLγ-SECE at the same meta "
                                           "rate, is the reference recipe's, trained before (no new outcome)"),
    # chapter 6: the rotated digits (CE, ensemble, MC dropout, focal loss over five seeds)
    "ch6-ts-vs-ensemble-interaction": Reads((_CE, _ENS), anchor='f"ch6-ts-vs-{key}-interaction"'),
    "ch6-ts-vs-dropout-interaction": Reads((_CE, _MC), anchor='f"ch6-ts-vs-{key}-interaction"'),
    "ch6-brier-ensemble-vs-ts": Reads((_CE, _ENS), anchor='f"ch6-brier-{key}-vs-ts"'),
    "ch6-brier-dropout-vs-ts": Reads((_CE, _MC), anchor='f"ch6-brier-{key}-vs-ts"'),
    "ch6-fair-ensemble-interaction": Reads((_CE, _ENS), anchor='f"ch6-fair-{key}-interaction"'),
    "ch6-fair-dropout-interaction": Reads((_CE, _MC), anchor='f"ch6-fair-{key}-interaction"'),
    "ch6-ensemble-vs-ts": Reads((_CE, _ENS)),
    "ch6-dropout-vs-ce": Reads((_CE, _MC)),
    "ch6-error-rises": Reads((_CE,)),
    "ch6-fair-focal": Reads((_CE, _FOCAL)),
    "ch6-focal-ranks-worse": Reads((_CE, _FOCAL)),
    "ch6-ts-gain-shrinks": Reads((_CE,)),
    # chapter 6's deployment page: cross-fitting on the reference CNN (smallest pool), recalibration and
    # OOD images on the rotated digits' runs, label shift on chapter 5's reference CE networks
    "ch6-crossfit-error": Reads(_CROSSFIT, earlier=_FIRST_CROSSFIT[0], why=_FIRST_CROSSFIT[1]),
    "ch6-crossfit-ece": Reads(_CROSSFIT, earlier=_FIRST_CROSSFIT[0], why=_FIRST_CROSSFIT[1]),
    "ch6-crossfit-nll": Reads(_CROSSFIT, earlier=_FIRST_CROSSFIT[0], why=_FIRST_CROSSFIT[1]),
    "ch6-fold-ensemble-ece": Reads(("ch6/crossfit/n2500/s*",)),
    "ch6-recal-labels": Reads((_CE,)),
    "ch6-ood-ensemble": Reads((_CE, _ENS)),
    "ch6-ood-ts": Reads((_CE,)),
    "ch6-ood-ts-lower": Reads((_CE,)),
    "ch6-label-shift-em": Reads((_CE5,), why="moved to these networks after an inconclusive first try on the "
                                              "rotated digits' networks that left no commit, so no earlier commit "
                                              "dates it; declared after these runs (post hoc), its text says so"),
    # the letters A-J as inputs of no class (declared before their runs), replacing the photo patches
    "ch6-letters-ensemble": Reads(("ch6/letters/CE/s*", "ch6/letters/ensemble/s*")),
    "ch6-letters-dropout": Reads(("ch6/letters/CE/s*", "ch6/letters/dropout/s*")),
    "ch6-letters-ts": Reads(("ch6/letters/CE/s*",)),
    "ch6-letters-ts-lower": Reads(("ch6/letters/CE/s*",)),
}

#: design choices fixed before their runs, checked like claims (not counted in any tally): the rates and
#: focal γ chapter 5's reference recipe takes from its grid (``REF_CHOSEN``, in the package)
CHOICES = {
    "ch5-choice-meta-lr": Reads(
        tuple(f"ch5/reference/{net} (meta lr {lr})/s[0-2]" for net in ("FLgamma-SECE", "FLgamma-DECE")
              for lr in ("0", "0.0001", "0.001", "0.01")),
        anchor="REF_CHOSEN = {", why="the γ-Nets' meta rates, chosen on the grid's three seeds against the frozen "
                                     "control (meta rate 0)"),
    "ch5-choice-focal": Reads(tuple(f"ch5/reference/{m}/s[0-2]" for m in ("Focal (gamma 1)", "Focal (gamma 2)",
                                                                         "Focal (gamma 3)", "CE")),
                              anchor="REF_CHOSEN = {",
                              why="focal loss's γ, chosen on the grid's three seeds against CE"),
}

#: what the history cannot show about a design choice, printed beside its registration on What held: the meta
#: rates are the grid's outcome, yet were committed before the grid's runs were created
CHOICE_CAVEATS = {
    "ch5-choice-meta-lr": "the rates are the grid's outcome, yet were first committed about a minute and a half "
                          "before its first run was created: they came from an uncommitted pass of the grid or were "
                          "chosen beforehand, and the history cannot show which; read them as declared with the "
                          "grid's runs, not before them",
}

#: checks that the set-up does what it should (a shift raises the error): reported, never counted
SANITY_CHECKS = frozenset({"ch6-error-rises"})
#: claims kept under their id but no longer tests of anything (their text says why): never counted
RETIRED = frozenset({"ch6-ts-gain-shrinks",
                     # the photo patches were told apart by brightness alone (AUROC 0.99): the letters replace them
                     "ch6-ood-ensemble", "ch6-ood-ts", "ch6-ood-ts-lower"})
#: claims whose test cannot inform the verdict on the paper's claim, with the reason the page shows: reported
#: under their id with their interval, never counted (not a verdict on the paper either way)
NOT_INFORMATIVE = {
    "ch5-sgd-sece-vs-ts": "it tests σγ-SECE (SGD), the first set-up's sigmoid-bounded γ-Net on another backbone, "
                          "not FLγ-SECE, and that γ-Net is not shown to beat its frozen control",
    "ch5-mce-vs-cedece": "its baseline, CE-DECE, is broken in this recipe (about twice CE's error), and the verdict "
                         "comes from the seeds added after the first one: on the planned seeds it is inconclusive",
}


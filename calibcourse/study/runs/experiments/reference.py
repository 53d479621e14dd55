"""The reference recipe's runs: the gamma-Net trained the way the code it builds on trains its meta-learner.

Wang and Golebiowski (2023) extend meta-calibration (Bohdal et al., TMLR 2023; arXiv 2021). That code
(``train_utils.py``, ``train.py`` of ``ondrejbohdal/meta-calibration``) makes one meta step per
training batch:

- the look-ahead is a plain SGD step of the **last layer only**, at the backbone's current learning
  rate, on the loss **summed** over the batch (``weight.fast = weight - current_LR * grad``);
- the meta-loss is ``CE + 0.5 * DECE`` on a batch of a meta-validation split of its own;
- the meta-learner's optimizer is Adam at its default rate (1e-3);
- the backbone takes the real step on the summed loss, its gradient norm clipped at 2, by SGD
  (momentum 0.9, weight decay 5e-4, the rate divided by 10 at two milestones), with a
  train/validation/meta split of 8:1:1.

This module registers that recipe, fixed before its runs, for the gamma-Net (:data:`REF_META`): its
runs (:func:`reference_runs`, ``ch5/reference/...``, named by :func:`ref_name`), the grids, seeds
and choice rule's margin fixed before them, and :data:`REF_DEPARTURES`, every departure from the
reference code that this scale forces. What is measured on the runs (the choice of the meta
learning rate on a selection split, the frozen-control test) is in
:mod:`calibcourse.study.analysis.reference`.
"""
from __future__ import annotations

__all__ = [
    "REF_SIZE_MEASURED",
    "REF_BACKBONE",
    "REF_META",
    "REF_META_LRS",
    "REF_GRID_SEEDS",
    "REF_N_SEEDS",
    "REF_CLAIM_SEEDS",
    "REF_FOCAL_GAMMAS",
    "REF_ARMS",
    "REF_ARM_LR",
    "REF_PLACEBO_LABEL",
    "REF_PREDICTIONS",
    "REF_CHOSEN",
    "REF_DEPARTURES",
    "REF_PARTS",
    "REF_MAX_ERROR_GAP",
    "reference_runs",
    "ref_name",
]

#: the backbone: a 1-D CNN on MNIST-1D, 2,750 generated training sequences cut 8:1:1:1 into training
#: (2,000), validation (250: temperature scaling), meta-validation (250: the gamma-Net's) and
#: selection (250: the choice of the meta learning rate and of focal loss's gamma); 5,000 test
#: sequences. Measured before the runs (CE, seed 0): at 8,000 training sequences this recipe
#: ends calibrated (2.0 % error, 1.4 % ECE), at 3,000 too (3.9 %, 2.6 %); at 2,000 it ends
#: overconfident (8.0 % error, 5.7 % ECE), the regime the method is for. 60 epochs, the rate
#: divided by 10 after epochs 30 and 45: the training loss reaches 0 by epoch 35
#: the measurement that chose the training-set size, before any gamma-Net ran (CE, the reference recipe,
#: seed 0, 60 epochs): training sequences -> (test error %, test ECE %)
REF_SIZE_MEASURED = {8000: (2.0, 1.4), 3000: (3.9, 2.6), 2000: (8.0, 5.7)}
REF_BACKBONE = {"data": {"name": "mnist1d", "mnist1d_train": 2750, "mnist1d_test": 5000, "val_fraction": 3 / 11},
                "model": {"name": "cnn1d", "channels": 32}, "optimizer": "sgd", "lr": 0.1, "momentum": 0.9,
                "nesterov": False, "weight_decay": 5e-4, "schedule": "step", "batch_size": 128, "epochs": 60,
                "reduction": "sum", "clip_grad_norm": 2.0}
#: the three parts of the validation split, in order (a third each): the gamma-Net's meta split,
#: temperature scaling's, and the selection split that chooses the grids' values
REF_PARTS = ("meta", "posthoc", "selection")

#: the gamma-Net (the paper's: 8 attention heads, gamma = |x~W| / tau, mean gamma 1 at the start) with
#: meta-calibration's loop. ``gamma_limit``: a bound by projection that cannot saturate
#: (:class:`calibcourse.study.training.meta.GammaNet`'s ``limit``: the output stays linear in its weights, so
#: the gradient has the same size at every gamma, unlike a sigmoid's, which vanishes at both ends);
#: 10 is twice the largest gamma of FLSD-53's schedule. ``log_hypergradient``: the diagnosis's
#: per-epoch sign and signal-to-noise ratio of the outer gradient; ``snapshots``: per-epoch summaries of
#: gamma only, no per-sample snapshots (the cache's budget)
REF_META = {"outer": "sece", "heads": 8, "tau": 1.0, "init_gamma": 1.0, "meta_lr": 1e-3, "val_batch": 128,
            "bandwidth": 0.05, "lookahead": "sgd", "lookahead_params": "head", "meta_loss": "ce+cal",
            "cal_weight": 0.5, "meta_val": 1 / 3, "gamma_limit": 10.0, "log_hypergradient": True, "snapshots": False}
#: the tuning grid of the meta learning rate: 0 is the frozen control (Adam at rate 0 never moves the
#: gamma-Net's parameters; its gammas still follow the backbone's features, and the projection of
#: ``gamma_limit`` may shrink them at the first step); 1e-3 is the reference code's own
REF_META_LRS = (0.0, 1e-4, 1e-3, 1e-2)
#: seeds of every grid value (the grids of the gamma-Nets and of focal loss); seeds of the reported methods
REF_GRID_SEEDS = (0, 1, 2)
REF_N_SEEDS = 10
#: more seeds for the methods whose claims the seed spread left undecided at REF_N_SEEDS seeds, as
#: the ledger's variance split put it before these runs: FLgamma-SECE against CE + TS about 13 seeds,
#: its MCE against CE-DECE about 18, its error cost against CE about 30 for an interval narrower than
#: a point (the test set's share of the variance stays). The cache's budget allows these, not the 34
#: seeds FLgamma-SECE against FLgamma-DECE would take.
REF_CLAIM_SEEDS = {"CE": 30, "FLgamma-SECE": 30, "CE-DECE (weight 0.5)": 18}
#: focal loss's grid (Mukhoti et al.'s fixed gammas)
REF_FOCAL_GAMMAS = (1.0, 2.0, 3.0)
#: the choice rule, fixed before the runs: for each value, the mean over the grid seeds of the
#: selection split's error and ECE (15 bins); among the values whose mean error is within this of the
#: reference's (the frozen control for a gamma-Net, CE for focal loss), the lowest mean ECE; ties go to
#: the first value; where no value is within it, the lowest mean ECE over every value (focal loss's grid:
#: every gamma broke the error rule, so the rule chose the least accurate one)
REF_MAX_ERROR_GAP = 0.01
#: the values the rule chose on the default profile's grid runs (:func:`calibcourse.study.analysis.reference.ref_choice`
#: recomputes them;
#: tests/test_reference.py checks them on the committed cache)
REF_CHOSEN = {"FLgamma-SECE": 1e-4, "FLgamma-DECE": 1e-3, "Focal": 3.0}

#: the diagnosis's arms, on the reference FLgamma-SECE at the reference code's meta rate 1e-3 (3 seeds):
#: a 5-step look-ahead (the last layer stepped on 4 further training batches: short-horizon bias,
#: Wu et al. 2018), an outer loop that starts after CE's validation-NLL minimum (epoch 31 of the
#: measured CE run, the epoch after the first decay), and a placebo whose outer gradient is a random
#: direction of the same norm (steps of the same size that carry no information; the backbone trains
#: at the gammas they give, so its accuracy moves with them)
REF_ARM_LR = 1e-3
#: the predictions, written down before the arms' runs (each arm against the reference FLgamma-SECE at
#: :data:`REF_ARM_LR`, paired over the grid's seeds; "final gamma": the mean gamma on the test split at the end)
REF_PREDICTIONS = {
    "horizon 5": "if a one-step look-ahead biases the gamma-Net towards faster fitting (short-horizon bias), "
                 "then with 5 steps the final gamma is higher and the share of outer steps that push gamma "
                 "down is lower than with 1 step",
    "delayed": "if the outer loop's early epochs, while the error still falls, set where gamma ends, then "
               "starting it after CE's validation-NLL minimum ends at another final gamma, at an ECE no worse",
    "placebo": "if the outer gradient's direction is what calibrates, a random direction of the same norm "
               "ends at a higher test ECE than the outer gradient",
}
REF_ARMS = {"horizon 5": {"horizon": 5}, "delayed": {"start_epoch": 32}, "placebo": {"control": "placebo"}}
#: the placebo at the reported configuration's rate (:data:`REF_CHOSEN`, 1e-4), on the frozen control's
#: seeds (``ch5/diagnosis/placebo (meta lr 0.0001)/s<k>``, k < :data:`REF_N_SEEDS`); its claim and
#: prediction were registered before its runs (:data:`calibcourse.study.analysis.metareg.REGISTERED`)
REF_PLACEBO_LABEL = f"placebo (meta lr {REF_CHOSEN['FLgamma-SECE']:g})"

#: every departure from the reference code (Bohdal et al.'s ``train.py`` / ``train_utils.py``) and
#: from the paper, with the reason: (what the reference does, what this study does, why)
REF_DEPARTURES = (
    (
        "ResNet-18 / WideResNet on CIFAR-10/100 (50,000 images)",
        "a 1-D CNN (49k weights) on 2,000 MNIST-1D sequences",
        "two CPU cores: a run must take seconds; 2,000 sequences make CE overconfident (measured)",
    ),
    (
        "350 epochs, the rate divided by 10 at 150 and 250",
        "60 epochs, divided by 10 at 30 and 45",
        "the training loss reaches 0 by epoch 35 at this size; longer adds nothing but time",
    ),
    (
        "meta-learner: learnable label smoothing or L2 (meta-calibration)",
        "the paper's gamma-Net (8 heads, |x~W|/tau), with a projection bound at gamma 10",
        "the method under test; the bound keeps an unbounded output from drifting without saturating",
    ),
    (
        "meta-loss CE + 0.5 DECE",
        "CE + 0.5 SECE (FLγ-SECE); CE + 0.5 DECE (FLγ-DECE)",
        "the paper's outer calibration loss in meta-calibration's meta-loss",
    ),
    (
        "meta batch = training batch (128), cycling the meta split",
        "128 samples drawn with replacement from the meta split",
        "the same size; draws instead of a cycle",
    ),
    (
        "one seed per configuration, meta rate Adam's default 1e-3",
        "meta rate grid {0, 1e-4, 1e-3, 1e-2} x 3 seeds, chosen on a selection split",
        "a learned component gets credit only against its frozen control (rate 0)",
    ),
    (
        "test split of 10,000 images",
        "5,000 generated test sequences",
        "the seeds, not the test set, limit the comparisons",
    ),
    (
        "train/validation/meta split 8:1:1",
        "8:1:1 plus a selection split of the validation's size",
        "the tuned values are chosen on data that neither the gamma-Net nor temperature scaling sees",
    ),
    (
        "the meta-loss's gradient also reaches the backbone (no zero_grad between the meta-loss's "
        "backward and the real step's)",
        "the meta-loss updates the gamma-Net only",
        "the paper's bilevel objective trains the gamma-Net; the leak would also train the backbone on the "
        "meta split, data the methods without a meta-learner never see",
    ),
    (
        "the checkpoint with the best validation accuracy is evaluated",
        "the last epoch",
        "one fixed budget for every method; early stopping would be one more tuned choice",
    ),
    (
        "random crops and horizontal flips",
        "no augmentation",
        "image augmentations; MNIST-1D's generator already shifts, scales and adds noise",
    ),
    (
        "DECE with a ranking-based soft accuracy (t_a = 100)",
        "DECE with a tempered-softmax soft accuracy",
        "the toolkit's differentiable ECE (chapter 5's lab); same soft bins",
    ),
)


def ref_name(method: str, meta_lr: float | None = None, seed: int = 0) -> str:
    """The run name of a reference run: ``ch5/reference/<method>[ (meta lr <x>)]/s<seed>``.

    Parameters
    ----------
    method : str
        ``"CE"``, ``"Focal (gamma 3)"``, ``"FLgamma-SECE"``, ...
    meta_lr : float, optional
        A gamma-Net's meta learning rate (None: a method without one).
    seed : int, default=0
        The seed.

    Returns
    -------
    str

    Examples
    --------
    >>> ref_name("FLgamma-SECE", 0.0, 3), ref_name("FLgamma-DECE", 1e-4, 0), ref_name("CE", seed=1)
    ('ch5/reference/FLgamma-SECE (meta lr 0)/s3', 'ch5/reference/FLgamma-DECE (meta lr 0.0001)/s0',
    'ch5/reference/CE/s1')
    """
    label = method if meta_lr is None else f"{method} (meta lr {meta_lr:g})"
    return f"ch5/reference/{label}/s{seed}"


def _gamma_net(outer: str, meta_lr: float, **change) -> dict:
    return {"loss": "focal", "meta": {**REF_META, "outer": outer, "meta_lr": meta_lr, **change}}


def reference_runs(ci: bool = False, chosen: dict | None = None, **base_changes) -> dict:
    """The reference recipe's runs, by name.

    - ``FLgamma-SECE`` and ``FLgamma-DECE`` at every meta rate of :data:`REF_META_LRS` (seeds
      :data:`REF_GRID_SEEDS`), the chosen rate and the frozen control on :data:`REF_N_SEEDS` seeds
      (the chosen rate on :data:`REF_CLAIM_SEEDS`'s where it names the method);
    - ``CE`` and ``CE-DECE (weight 0.5)`` (:data:`REF_CLAIM_SEEDS`'s seeds) and ``Focal (gamma g)`` (the
      grid's seeds; the chosen gamma on :data:`REF_N_SEEDS`);
    - the diagnosis's arms ``ch5/diagnosis/<arm>/s<seed>`` (:data:`REF_ARMS`, the grid's seeds), and the
      placebo at the chosen rate (:data:`REF_PLACEBO_LABEL`, :data:`REF_N_SEEDS` seeds).

    Parameters
    ----------
    ci : bool, default=False
        Seed 0 of everything.
    chosen : dict, optional
        The chosen values (default :data:`REF_CHOSEN`).
    **base_changes
        Changes of the backbone (a smaller profile's data or epochs).

    Returns
    -------
    dict
        ``{name: config}``.

    Examples
    --------
    >>> runs = reference_runs()
    >>> runs[ref_name("FLgamma-SECE", 0.0, 9)]["meta"]["meta_lr"], len([n for n in runs if "meta lr 0.01)" in n])
    (0.0, 6)
    """
    chosen = {**REF_CHOSEN, **(chosen or {})}
    base = {**REF_BACKBONE, **base_changes}
    grid_seeds = (0,) if ci else REF_GRID_SEEDS
    all_seeds = (0,) if ci else tuple(range(REF_N_SEEDS))

    def seeds(method):
        return (0,) if ci else tuple(range(REF_CLAIM_SEEDS.get(method, REF_N_SEEDS)))

    runs = {}
    for s in seeds("CE"):
        runs[ref_name("CE", seed=s)] = {**base, "seed": s}
    for s in seeds("CE-DECE (weight 0.5)"):  # the MCE claim's baseline: CE + 0.5 DECE (the Adam grid's choice)
        runs[ref_name("CE-DECE (weight 0.5)", seed=s)] = {**base, "loss": "ce_dece", "loss_kwargs": {"weight": 0.5},
                                                          "seed": s}
    for g in REF_FOCAL_GAMMAS:
        for s in all_seeds if g == chosen["Focal"] else grid_seeds:
            runs[ref_name(f"Focal (gamma {g:g})", seed=s)] = {**base, "loss": "focal", "loss_kwargs": {"gamma": g},
                                                             "seed": s}
    for method, outer in (("FLgamma-SECE", "sece"), ("FLgamma-DECE", "dece")):
        for lr in REF_META_LRS:
            # the chosen rate on its method's seeds and the frozen control of the SECE gamma-Net on every seed;
            # FLgamma-DECE's frozen control is the same network (at rate 0 the outer loss never acts: a test
            # checks the bits)
            if lr == chosen[method]:
                lr_seeds = seeds(method)
            elif lr == 0 and method == "FLgamma-SECE":
                lr_seeds = all_seeds
            else:
                lr_seeds = grid_seeds
            for s in lr_seeds:
                runs[ref_name(method, lr, s)] = {**base, **_gamma_net(outer, lr), "seed": s}
    for arm, change in REF_ARMS.items():
        for s in grid_seeds:
            runs[f"ch5/diagnosis/{arm}/s{s}"] = {**base, **_gamma_net("sece", REF_ARM_LR, **change), "seed": s}
    for s in all_seeds:  # the placebo at the reported rate, on the frozen control's seeds
        runs[f"ch5/diagnosis/placebo (meta lr {chosen['FLgamma-SECE']:g})/s{s}"] = {
            **base, **_gamma_net("sece", chosen["FLgamma-SECE"], control="placebo"), "seed": s}
    return runs

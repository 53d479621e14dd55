"""What decides a run's trained weights and outputs: the data and its splits, the models, the losses
(torch), the steps and the training loop, the bilevel gamma-Net, cross-fitting, the predictive
ensembles, and the provenance that fingerprints this code (a change here needs ``make restamp``)."""

__all__: list[str] = []  # a folder of modules: import them by name

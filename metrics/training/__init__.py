"""Training: learned metrics trained as TrainingRuns on a worker.

- ``services``: a run created, claimed, followed (``TrainingRunProgress``), cancelled, failed, and its model
  registered; the stage itself is the metric's ``Trainable`` runner:
- ``stages``: QuantiDCE's and SelF-Eval's stages (one ``ml.trainers`` module per metric);
- ``mdd``: MDD-Eval's teacher, augmentation and student stages;
- ``recipes``: one command per metric, a recipe's stages run in order, each resuming;
- ``sources``: a corpus of Concord written out as a training file.

Builds on ``metrics.registry`` (the metrics and their rows) and on ``ml``; nothing below imports it (a run is queued by task
name, ``metrics.tasks``)."""

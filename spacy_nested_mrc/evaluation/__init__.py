"""Judging a pipeline on gold data: the registered scorer, the readable report, threshold
tuning, score calibration and displaCy views."""

"""Judging a trained pipeline on gold data: the readable report, threshold tuning and displaCy
views, above the pipe (the scorer and calibration they use are in ``scoring/``)."""

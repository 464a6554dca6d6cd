"""What the pipe and ``spacy train`` score with, below the pipe: the registered scorer and the
calibration of span scores. Judging a trained pipeline (report, tuning) is ``evaluation/``."""

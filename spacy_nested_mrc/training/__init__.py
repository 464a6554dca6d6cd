"""How the package's pipes learn under ``spacy train``: the optimizer that steps their torch
parameters at once."""

"""How the package's pipes learn under ``spacy train``: the optimizer that steps their torch
parameters at once (``optimizer``), and the shim of the models' heads, whose
parameters learn at a multiple of the rate (``shims``); and after it, trained pipelines
averaged parameter by parameter into one (``averaging``)."""

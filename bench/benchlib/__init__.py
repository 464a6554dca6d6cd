"""What the studies in bench/ share; each other script in bench/ is one study.

- ``machine``: the machine and commit a result was measured on.
- ``memory``: the resident size of a process and its children.
- ``outputs``: a study's OUT.json and OUT.md.
- ``configs``: the configs the studies train, and config values set on their command lines.
- ``data``: GENIA JSON Lines read as texts, records or abstracts.
- ``pipelines``: pipelines built, run and compared outside the timing loops.
- ``speed``: the bare encoder and interleaved timing of pipelines beside it.
- ``scoring``: dev predictions scored by both span scorers.
- ``annotate``: the input and command line of an ``annotate`` job.

The studies run as ``python bench/SCRIPT.py`` (bench/ is then first on ``sys.path``) and import
``from benchlib.MODULE import NAME``.
"""

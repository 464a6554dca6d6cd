"""What the tests share: the tiny encoder, toy data and pipelines of each architecture, and the
checks and files that several test modules use (``from helpers.pipes import PIPE``: ``tests/``
is on ``sys.path`` through pytest's ``pythonpath``). Test modules import these, never each
other."""

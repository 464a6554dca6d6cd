"""Run the command-line interface: ``python -m spacy_nested_mrc``."""
from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())

__title__ = "spacy-nested-mrc"
__version__ = "0.1.0"

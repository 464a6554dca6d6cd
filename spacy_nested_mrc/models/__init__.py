"""The registered architectures of ``nested_mrc_ner``, one folder each.

See ``spacy_nested_mrc.types`` for the interface a model implements.
"""

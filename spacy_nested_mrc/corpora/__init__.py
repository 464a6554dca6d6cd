"""Converters from published corpora to GENIA-style JSON Lines, one module per source format.

- :mod:`.genia_xml`: the GENIA term corpus 3.02 XML (GPML), the standard nested-NER split.
- :mod:`.brat`: BRAT standoff annotation (``name.txt`` + ``name.ann``), aligned to spaCy tokens.
"""

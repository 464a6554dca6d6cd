"""Hugging Face encoders on spacy-transformers' machinery: loading them (``hf``), the
layers built of them (``build``), how they are called (``passes``) and the windows the shared
``transformer`` reads (``span_getters``)."""

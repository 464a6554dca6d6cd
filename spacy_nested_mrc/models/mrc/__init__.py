"""The MRC query model (Li et al., 2020, "A Unified MRC Framework for Named Entity Recognition")."""

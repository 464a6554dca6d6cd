"""Which text of a gold doc is annotated (``spacy_nested_mrc.annotation``): the character
regions of its context-only text, and the spans that do not start in them."""

import numpy as np
import spacy

from spacy_nested_mrc.annotation import annotated_only, in_regions, unannotated_regions


def test_regions_by_characters():
    regions = np.array([[5, 10], [20, 30]])
    assert in_regions(np.array([0, 5, 9, 10, 19, 20, 29, 30]), regions).tolist() == [
        False, True, True, False, False, True, True, False]
    assert annotated_only({(0, 3, "A"), (6, 8, "B")}, regions) == {(0, 3, "A")}
    doc = spacy.blank("en").make_doc("a b")
    assert unannotated_regions(doc, "nested").shape == (0, 2)

"""Multi-NER (Wang et al., 2023, "Named Entity Recognition via Machine Reading Comprehension: A
Multi-Task Learning Approach"): one MRC task per entity type, with type attention."""

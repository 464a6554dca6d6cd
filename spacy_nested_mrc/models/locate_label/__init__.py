"""The Locate-and-Label model (Shen et al., 2021, "Locate and Label: A Two-stage Identifier for
Nested Named Entity Recognition"): seed spans are filtered and their boundaries regressed
(locate), then the adjusted spans are classified (label) and decoded with Soft-NMS."""

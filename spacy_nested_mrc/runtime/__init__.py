"""How a trained pipeline runs: loading for the commands, ONNX Runtime, int8 encoders,
worker processes and memory given back in training."""

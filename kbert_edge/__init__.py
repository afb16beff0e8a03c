"""kbert_edge: an exported .tflite model run on a device by LiteRT's interpreter (imported on first use), with
`kbert_core`'s tokenizer, windows and decoding, and neither Keras nor TensorFlow.

To ship it: `kbert_core/`, `kbert_edge/` and `apps/edge_predict.py`, side by side.
"""

from kbert_edge.edge_model import EdgeModel, load_interpreter

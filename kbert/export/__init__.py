"""Export for serving and the edge: SavedModel and TFLite models that take raw text.

The only part of kbert, with `kbert.text` and the `tf.data` pipelines, that imports
TensorFlow. Exports run in a TensorFlow-backend process (see `apps/export.py`).
"""

from kbert.export.loading import load_exportable, require_tensorflow_backend
from kbert.export.saved_model import export_saved_model, is_export_folder
from kbert.export.serving import MODEL_KINDS, ExportSpec, serving_functions
from kbert.export.tflite import QUANTIZATIONS, ExportError, export_tflite

"""kbert: BERT from Keras 3 layers, on TensorFlow, JAX or PyTorch."""

from kbert.config import PRESETS, BertConfig
from kbert.layers import MultiHeadSelfAttention, PositionEmbedding, TransformerEncoder, mean_pool
from kbert.models import BertBackbone, SentenceEncoder

__version__ = "0.1.0"

from kbert.layers.dropout import Dropout
from kbert.layers.mean_pooling import mean_pool
from kbert.layers.multi_head_self_attention import MultiHeadSelfAttention
from kbert.layers.position_embedding import PositionEmbedding
from kbert.layers.transformer_encoder import TransformerEncoder

"""kbert: BERT from Keras 3 layers, on TensorFlow, JAX or PyTorch."""

from kbert.malloc_settings import keep_freed_buffers

keep_freed_buffers()  # before any backend allocates: see kbert/malloc_settings.py

from kbert.start_up import start_keras

start_keras()  # without TensorFlow's and CUDA's start-up lines (KBERT_VERBOSE=1 shows them)

from kbert.config import PRESETS, BertConfig
from kbert.layers import MultiHeadSelfAttention, PositionEmbedding, TransformerEncoder, mean_pool
from kbert.models import BertBackbone
from kbert.tasks import (BertClassifier, BertMaskedLMPreprocessor, BertPreprocessor, BertPretrainer,
                         BertQuestionAnswerer, BertQuestionAnswererPreprocessor, BertSentenceEncoder,
                         BertSentenceEncoderPreprocessor, BertTask, BertTextClassifierPreprocessor,
                         BertTokenClassifier, BertTokenClassifierPreprocessor, ElectraPretrainer)
from kbert.optimizers import BertAdamW, bert_adamw  # registers them for load_model
from kbert.optimizers.schedules import WarmupLinearDecay
from kbert.saving import save_backbone

__version__ = "0.1.0"

_TEXT = ("BertTokenizer", "train_wordpiece_vocabulary")


def __getattr__(name):
    # The tokenizer runs on TensorFlow ops: import it (and TensorFlow) on first use only.
    if name in _TEXT:
        import kbert.text

        return getattr(kbert.text, name)
    raise AttributeError(f"module 'kbert' has no attribute {name!r}")

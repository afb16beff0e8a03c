"""Text to BERT inputs: the WordPiece tokenizer and vocabulary training, ALBERT's SentencePiece and RoBERTa's
byte-level BPE tokenizers, and the choice among them (`load_hf_tokenizer`).

They run on TensorFlow and tensorflow-text ops (in the exported graphs too), whatever the Keras backend;
everything on token ids works without them. Without them, importing this package is an ImportError that
says what to install.
"""

from kbert.start_up import import_tensorflow

try:
    import_tensorflow()  # quietly; under torch or JAX, off the GPUs
except ImportError as error:
    raise ImportError(f"Raw text needs kbert's tokenizer, which runs on TensorFlow ops ({error}): pip install "
                      "'tensorflow==2.21.*' 'tensorflow-text==2.21.*'. Token ids (dicts of token_ids, "
                      "segment_ids, padding_mask) work without them.") from None

from kbert.text.byte_level_bpe import ByteLevelBPETokenizer
from kbert.text.hf_tokenizers import load_hf_tokenizer, tokenizer_from_config
from kbert.text.sentence_piece import SentencePieceTokenizer
from kbert.text.tokenizer import SPECIAL_TOKENS, BertTokenizer
from kbert.text.vocabulary import train_wordpiece_vocabulary

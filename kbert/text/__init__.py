"""Text to BERT inputs: the WordPiece tokenizer and vocabulary training."""

from kbert.text.tokenizer import SPECIAL_TOKENS, BertTokenizer
from kbert.text.vocabulary import train_wordpiece_vocabulary

"""kbert_core: the rules of kbert that need neither Keras nor TensorFlow, with numpy and the Python standard library
only; the library, the edge runner (`kbert_edge`) and the server share them.

BERT's WordPiece tokenizer in pure Python (`WordPiece`), RoBERTa's byte-level BPE (`ByteLevelBPE`) and ALBERT's
SentencePiece (`SentencePiece`) with Hugging Face's ids and offsets, packed into model inputs by one rule
(`pack`, with each model's special tokens as a `Layout`), the windows that read long texts (strided for question
answering and long classifier inputs, word-aligned for NER), answer-span decoding over windows, entity grouping
from BIO tags, a classifier's probabilities and its rule for a blank text, zero-shot questions to an NLI
classifier, what the CPU offers, and the start-up lines held back. kbert's training and evaluation code uses the
same functions (`kbert.data.windows`' `SquadWindows` and `NerWindows`, `kbert.metrics.entity_f1`), so the device
and the Keras model decode alike.

It is a package of its own, beside `kbert/`, because importing anything inside `kbert` runs `kbert/__init__.py`,
which imports Keras (it registers kbert's classes for `keras.saving.load_model` after `import kbert`).
"""

from kbert_core.answers import best_answers, null_score, says_no_answer, window_candidates
from kbert_core.byte_level_bpe import ByteLevelBPE
from kbert_core.classification import EMPTY_TEXT, class_probabilities, is_blank
from kbert_core.entities import entity_spans, get_entities
from kbert_core.packing import Layout, kept_lengths, pack
from kbert_core.sentence_piece import SentencePiece
from kbert_core.windows import (MAX_WINDOWS, first_pieces, max_context, pack_question_windows, question_tokens_kept,
                                question_windows, word_windows)
from kbert_core.wordpiece import WordPiece, normalize_char
from kbert_core.zero_shot import ZeroShotQuestion

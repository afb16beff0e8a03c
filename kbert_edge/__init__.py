"""kbert_edge: the part of kbert that runs on a device, with numpy and the Python standard library only.

BERT's WordPiece tokenizer in pure Python (`WordPiece`), the windows that read long texts
(strided for question answering, word-aligned for NER), answer-span decoding over windows
and entity grouping from BIO tags; `EdgeModel` runs an exported .tflite file with them
(LiteRT's interpreter, imported on first use). kbert's training and evaluation code uses
the same functions (`kbert.data.SquadWindows`, `kbert.data.NerWindows`,
`kbert.metrics.entity_f1`), so the device and the Keras model decode alike.

It is a package of its own, beside `kbert/`, because importing anything inside `kbert`
runs `kbert/__init__.py`, which imports Keras (it registers kbert's classes for
`keras.saving.load_model` after `import kbert`). To ship it: `kbert_edge/` and
`apps/edge_predict.py`, side by side.
"""

from kbert_edge.answers import best_answers, window_candidates
from kbert_edge.edge_model import EdgeModel, load_interpreter
from kbert_edge.entities import entity_spans, get_entities
from kbert_edge.windows import (MAX_WINDOWS, first_pieces, max_context, pack_question_windows, question_tokens_kept,
                                question_windows, word_windows)
from kbert_edge.wordpiece import WordPiece, kept_lengths, normalize_char

"""sentence-transformers encoding texts with a folder kbert wrote (`BertSentenceEncoder.export_to_transformers`),
in a process of its own (torch): the reference of tests/tasks/test_bert_sentence_encoder.py.

argv: FOLDER TEXTS_JSON OUT. Writes the embeddings `SentenceTransformer(FOLDER).encode(texts)` gives to OUT (.npy).
"""

import json
import sys

import numpy as np
from sentence_transformers import SentenceTransformer

folder, texts, out = sys.argv[1:]
np.save(out, SentenceTransformer(folder, device="cpu").encode(json.loads(open(texts).read())))

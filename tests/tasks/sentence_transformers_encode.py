"""sentence-transformers encoding texts with sentence-transformers folders (all-MiniLM-L6-v2, or what
`BertSentenceEncoder.export_to_transformers` wrote), in a process of its own (torch): the reference of
tests/tasks/test_bert_sentence_encoder.py.

argv: TEXTS_JSON FOLDER OUT [FOLDER OUT ...]. Writes the embeddings `SentenceTransformer(FOLDER).encode(texts)` gives
to each OUT (.npy).
"""

import json
import sys

import numpy as np
from sentence_transformers import SentenceTransformer

texts = json.loads(open(sys.argv[1]).read())
for folder, out in zip(sys.argv[2::2], sys.argv[3::2]):
    np.save(out, SentenceTransformer(folder, device="cpu").encode(texts))

"""Computes Hugging Face reference outputs for a BERT checkpoint, in a process of its own.

Importing torch or transformers where TensorFlow is loaded can segfault, so tests run
this script as a subprocess and read its .npz.

    python tools/hf_reference.py CHECKPOINT_DIR SENTENCES_JSON OUT_NPZ

SENTENCES_JSON holds a list of texts or [text, pair] lists. The .npz holds the
transformers tokenizer's `token_ids`, `segment_ids`, `padding_mask` (padded to the
longest), `BertModel`'s `sequence_output` and `pooled_output`, and sentence-transformers'
normalised mean-pooled `sentence_embedding` for the single texts.
"""

import json
import sys

import numpy as np
import torch
from transformers import AutoTokenizer, BertModel


def main(checkpoint, sentences_file, out_file):
    examples = json.load(open(sentences_file))
    texts = [e if isinstance(e, str) else e[0] for e in examples]
    pairs = [None if isinstance(e, str) else e[1] for e in examples]
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    if any(pairs):
        batch = tokenizer(texts, [p or "" for p in pairs], padding=True, return_tensors="pt")
    else:
        batch = tokenizer(texts, padding=True, return_tensors="pt")
    model = BertModel.from_pretrained(checkpoint, add_pooling_layer=True).eval()
    with torch.no_grad():
        out = model(**batch)
    result = {
        "token_ids": batch["input_ids"].numpy().astype("int32"),
        "segment_ids": batch["token_type_ids"].numpy().astype("int32"),
        "padding_mask": batch["attention_mask"].numpy().astype("int32"),
        "sequence_output": out.last_hidden_state.numpy(),
        "pooled_output": out.pooler_output.numpy(),
    }
    if not any(pairs):
        from sentence_transformers import SentenceTransformer

        encoder = SentenceTransformer(checkpoint, device="cpu")
        result["sentence_embedding"] = encoder.encode(texts, normalize_embeddings=True)
    np.savez(out_file, **result)


if __name__ == "__main__":
    main(*sys.argv[1:])

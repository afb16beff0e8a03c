"""Sentence Transformers' side of the rank test (`test_rank.py`), run in a process of its own (torch, transformers
and sentence-transformers, never beside TensorFlow):

    python cross_encoder_reference.py MINILM FOLDER CASES OUT

Puts a random one-label head on all-MiniLM-L6-v2 (the folder MINILM), as `BertForSequenceClassification` draws it
but at standard deviation 1 (so that documents' scores differ beyond float noise), saves it into FOLDER with MINILM's
tokenizer files, and writes to OUT what `CrossEncoder(FOLDER).rank` answers each case of CASES (JSON: a list of
{"query", "documents", "top_k"}), with the documents' texts.
"""

import json
import pathlib
import shutil
import sys
import warnings

import torch
import transformers
from sentence_transformers import CrossEncoder

TOKENIZER_FILES = ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json")


def main(minilm, folder, cases, out):
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification.from_pretrained(minilm, num_labels=1).eval()
    torch.nn.init.normal_(model.classifier.weight, std=1.0)
    model.save_pretrained(folder)
    for name in TOKENIZER_FILES:
        shutil.copy(pathlib.Path(minilm) / name, folder)
    encoder = CrossEncoder(folder, device="cpu")
    answers = [encoder.rank(case["query"], case["documents"], top_k=case["top_k"], return_documents=True)
               for case in json.loads(pathlib.Path(cases).read_text("utf-8"))]
    pathlib.Path(out).write_text(json.dumps(answers))


if __name__ == "__main__":
    main(*sys.argv[1:])

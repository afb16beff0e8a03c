"""Hugging Face's ids for texts on a tokenizer folder that kbert wrote, in a process of its own (transformers):

    python hf_encode_reference.py FOLDER TEXTS OUT

FOLDER is read with `AutoTokenizer.from_pretrained`; TEXTS is a JSON list of strings; OUT gets the JSON list of
each text's unpadded `input_ids`, special tokens included.
"""

import json
import pathlib
import sys

import transformers


def main(folder, texts, out):
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    ids = tokenizer(json.loads(pathlib.Path(texts).read_text("utf-8")))["input_ids"]
    pathlib.Path(out).write_text(json.dumps(ids), "utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])

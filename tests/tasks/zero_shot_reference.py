"""Hugging Face's side of the zero-shot tests (`test_zero_shot.py`), run in a process of its own (torch + transformers,
never beside TensorFlow):

    python zero_shot_reference.py MINILM FOLDER CASES OUT

Puts a random classification head on all-MiniLM-L6-v2 (the folder MINILM) for each label order of CASES (JSON:
{"label_orders": [[name, ...], ...], "calls": [{"texts", "candidate_labels", "hypothesis_template", "multi_label"},
...]}), as `BertForSequenceClassification` does but with the head's weights drawn at standard deviation 1 (so that
labels' scores differ beyond float noise), saves each into FOLDER/<its index> with MINILM's tokenizer files, and
writes to OUT, per label order, what transformers' zero-shot-classification pipeline answers each call.
"""

import json
import pathlib
import shutil
import sys
import warnings

import torch
import transformers

TOKENIZER_FILES = ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json")


def main(minilm, folder, cases, out):
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    cases = json.loads(pathlib.Path(cases).read_text("utf-8"))
    answers = []
    for i, names in enumerate(cases["label_orders"]):
        torch.manual_seed(i)
        model = transformers.BertForSequenceClassification.from_pretrained(
            minilm, num_labels=len(names), id2label=dict(enumerate(names)),
            label2id={name: k for k, name in enumerate(names)}).eval()
        torch.nn.init.normal_(model.classifier.weight, std=1.0)
        saved = pathlib.Path(folder) / str(i)
        model.save_pretrained(saved)
        for name in TOKENIZER_FILES:
            shutil.copy(pathlib.Path(minilm) / name, saved)
        pipeline = transformers.pipeline("zero-shot-classification", model=str(saved), tokenizer=str(saved),
                                         device="cpu")
        answers.append([pipeline(call["texts"], candidate_labels=call["candidate_labels"],
                                 hypothesis_template=call["hypothesis_template"], multi_label=call["multi_label"])
                        for call in cases["calls"]])
    pathlib.Path(out).write_text(json.dumps(answers))


if __name__ == "__main__":
    main(*sys.argv[1:])

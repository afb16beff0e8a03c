"""Hugging Face's side of the no-answer tests (`test_bert_question_answerer.py`), run in a process of its own (torch +
transformers, never beside TensorFlow):

    python qa_no_answer_reference.py MINILM FOLDER CASES OUT

Puts a random question-answering head on all-MiniLM-L6-v2 (the folder MINILM) as `BertForQuestionAnswering` does,
drawn with the first seed from 0 on under which the null score beats the best span's for between a third and two
thirds of the cases, and saves it into FOLDER with MINILM's tokenizer files. CASES is a JSON list of [question, context] pairs
whose contexts fit in one window. From the model's logits, by SQuAD 2.0's rule in BERT's run_squad.py (which
transformers 5 no longer ships as a pipeline), OUT gets per case {"null": the start + end logit at [CLS], "best":
the best start + end logit over every pair of context tokens (start <= end, at most 30 tokens), found by trying
each, and its "start" and "end" characters in the context (the tokenizer's offsets)}, and the "seed".
"""

import json
import pathlib
import shutil
import sys
import warnings

import torch
import transformers

MAX_ANSWER_LENGTH = 30
TOKENIZER_FILES = ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json")


def scores(model, tokenizer, question, context):
    """The case's null score and best span (by trying every pair of context tokens)."""
    encoded = tokenizer(question, context, return_tensors="pt", return_offsets_mapping=True)
    offsets = encoded.pop("offset_mapping")[0].tolist()
    with torch.no_grad():
        out = model(**encoded)
    start, end = out.start_logits[0].tolist(), out.end_logits[0].tolist()
    tokens = [i for i, sequence in enumerate(encoded.sequence_ids(0)) if sequence == 1]
    best, i, j = max((start[i] + end[j], i, j) for i in tokens for j in tokens if 0 <= j - i < MAX_ANSWER_LENGTH)
    return {"null": start[0] + end[0], "best": best, "start": offsets[i][0], "end": offsets[j][1]}


def main(minilm, folder, cases, out):
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    cases = json.loads(pathlib.Path(cases).read_text("utf-8"))
    tokenizer = transformers.AutoTokenizer.from_pretrained(minilm)
    for seed in range(100):
        torch.manual_seed(seed)
        model = transformers.BertForQuestionAnswering.from_pretrained(minilm).eval()
        found = [scores(model, tokenizer, question, context) for question, context in cases]
        if len(cases) / 3 <= sum(case["null"] > case["best"] for case in found) <= 2 * len(cases) / 3:
            break
    else:
        raise SystemExit("no seed below 100 gives a mix of answers and no-answers")
    model.save_pretrained(folder)
    for name in TOKENIZER_FILES:
        shutil.copy(pathlib.Path(minilm) / name, folder)
    pathlib.Path(out).write_text(json.dumps({"seed": seed, "cases": found}))


if __name__ == "__main__":
    main(*sys.argv[1:])

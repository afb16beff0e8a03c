"""Hugging Face's side of the checkpoint tests, run in a process of its own (torch + transformers).

    python hf_heads_reference.py make FOLDER    # a tiny random checkpoint per BERT class in
                                                # FOLDER/<class>/, and its outputs in FOLDER/<class>.npz;
                                                # the classifier also as multi-label (FOLDER/MULTI_LABEL/)
    python hf_heads_reference.py run FOLDER...  # each folder's outputs (the class its config
                                                # names) in FOLDER/hf_outputs.npz, with the ids its
                                                # tokenizer keeps of LONG_TEXT under truncation=True

Outputs are on `INPUTS` (two rows, the second padded; two segments), in eval mode.
"""

import json
import pathlib
import sys

import numpy as np
import torch
import transformers

CLASSES = ["BertModel", "BertForPreTraining", "BertForMaskedLM", "BertForSequenceClassification",
           "BertForTokenClassification", "BertForQuestionAnswering"]
INPUTS = {
    "input_ids": [[2, 11, 12, 13, 3, 21, 22, 3], [2, 31, 32, 3, 41, 3, 0, 0]],
    "token_type_ids": [[0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 1, 1, 0, 0]],
    "attention_mask": [[1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 0, 0]],
}
MULTI_LABEL = "BertForSequenceClassification_multi_label"
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"word{i}" for i in range(59)]
LONG_TEXT = "the film " * 400  # longer than any model's positions: the tokenizer must cut it


def outputs(model):
    """Every output of `model` on `INPUTS` as numpy arrays, by Hugging Face's names."""
    with torch.no_grad():
        result = model(**{key: torch.tensor(value) for key, value in INPUTS.items()},
                       output_hidden_states=True)
    arrays = {"hidden_states": result.hidden_states[-1].numpy()}
    for name in ("last_hidden_state", "pooler_output", "logits", "prediction_logits",
                 "seq_relationship_logits", "start_logits", "end_logits"):
        if getattr(result, name, None) is not None:
            arrays[name] = result[name].numpy()
    if isinstance(model, transformers.BertForMaskedLM):  # its word predictions, by BertForPreTraining's name
        arrays["prediction_logits"] = arrays.pop("logits")
    return arrays


def make(folder):
    folder = pathlib.Path(folder)
    for index, name in enumerate(CLASSES):
        torch.manual_seed(index)
        labels = {"id2label": {0: "O", 1: "B-PER", 2: "I-PER"}, "label2id": {"O": 0, "B-PER": 1, "I-PER": 2}}
        config = transformers.BertConfig(
            vocab_size=len(VOCABULARY), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=64, max_position_embeddings=16, type_vocab_size=2,
            **(labels if "Classification" in name else {}))
        model = getattr(transformers, name)(config).eval()
        with torch.no_grad():  # non-zero biases and LayerNorms, so that a dropped one shows
            for parameter in model.parameters():
                parameter.add_(0.05 * torch.randn_like(parameter))
        model.save_pretrained(folder / name, safe_serialization=True)
        (folder / name / "vocab.txt").write_text("".join(f"{token}\n" for token in VOCABULARY))
        np.savez(folder / f"{name}.npz", **outputs(model))
        if name == "BertForSequenceClassification":  # the same model trained for any number of labels
            model.config.problem_type = "multi_label_classification"
            model.save_pretrained(folder / MULTI_LABEL, safe_serialization=True)
            (folder / MULTI_LABEL / "vocab.txt").write_text("".join(f"{token}\n" for token in VOCABULARY))


def run(folders):
    for folder in map(pathlib.Path, folders):
        name = json.loads((folder / "config.json").read_text())["architectures"][0]
        model = getattr(transformers, name).from_pretrained(folder).eval()
        arrays = outputs(model)
        if model.config.problem_type == "multi_label_classification":  # what the pipelines apply to its logits
            arrays["probabilities"] = torch.sigmoid(torch.tensor(arrays["logits"])).numpy()
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
        arrays["long_text_ids"] = np.array(tokenizer(LONG_TEXT, truncation=True)["input_ids"])
        np.savez(folder / "hf_outputs.npz", problem_type=str(model.config.problem_type), **arrays)


if __name__ == "__main__":
    {"make": lambda args: make(args[0]), "run": run}[sys.argv[1]](sys.argv[2:])

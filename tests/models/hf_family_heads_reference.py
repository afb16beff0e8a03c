"""Hugging Face's side of the family head tests (`test_hf_family_heads.py`), run in a process of its own (torch +
transformers, never beside TensorFlow):

    python hf_family_heads_reference.py make FOLDER     # a tiny random model of each family's task classes in
                                                        # FOLDER/<name>/ (`save_pretrained`, a vocab.txt beside),
                                                        # its outputs in FOLDER/<name>.npz
    python hf_family_heads_reference.py run FOLDER...   # `from_pretrained` of the class each folder's config
                                                        # names: its outputs and the weights it did not find or
                                                        # did not use, in FOLDER/hf_outputs.npz

Models are `hf_families_reference.CONFIGS` (hidden width 32, 2 layers; ALBERT's 3 on 2 groups) with a head; outputs
on `hf_families_reference.inputs(family)` (padded singles, and pairs where the family has token types), in eval
mode. Masked-LM logits are kept at `MASK_POSITIONS` only.
"""

import json
import pathlib
import sys

import numpy as np

try:
    from tests.models.hf_families_reference import CONFIGS, inputs
except ModuleNotFoundError:  # run as a script (`run_python`): the module beside it
    from hf_families_reference import CONFIGS, inputs

FAMILIES = ("roberta", "albert", "electra", "distilbert")
PREFIXES = {"roberta": "Roberta", "albert": "Albert", "electra": "Electra", "distilbert": "DistilBert"}
TASKS = ("ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering", "ForMaskedLM")
# Classifiers besides the 3-class ones: a regressor and a multi-label classifier (the same head, other losses).
PROBLEMS = {"roberta_regression": ("roberta", "regression"),
            "distilbert_multi_label": ("distilbert", "multi_label_classification")}
LABELS = ["O", "B-PER", "I-PER"]
MASK_POSITIONS = [[1, 5], [2, 1], [3, 6], [1, 3], [4, 8]]  # real tokens of each row of `inputs`


def names():
    """{folder name: (family, Hugging Face class, problem_type or None)} of every model `make` writes."""
    found = {f"{family}_{task}": (family, PREFIXES[family] + task, None) for family in FAMILIES for task in TASKS}
    found.update({name: (family, PREFIXES[family] + "ForSequenceClassification", problem)
                  for name, (family, problem) in PROBLEMS.items()})
    return found


def outputs(model, family):
    """The head's outputs on `inputs(family)`: `logits` (masked LM: at `MASK_POSITIONS`), or `start_logits` and
    `end_logits`."""
    import torch

    ids, types, mask = (torch.tensor(array, dtype=torch.long) for array in inputs(family))
    extra = {} if family == "distilbert" else {"token_type_ids": types}
    with torch.no_grad():
        result = model(input_ids=ids, attention_mask=mask, **extra)
    if getattr(result, "start_logits", None) is not None:
        return {"start_logits": result.start_logits.numpy(), "end_logits": result.end_logits.numpy()}
    logits = result.logits.numpy()
    if type(model).__name__.endswith("ForMaskedLM"):
        logits = np.take_along_axis(logits, np.array(MASK_POSITIONS)[..., None], axis=1)
    return {"logits": logits}


def make(folder):
    import torch
    import transformers

    folder = pathlib.Path(folder)
    for index, (name, (family, class_name, problem)) in enumerate(names().items()):
        torch.manual_seed(index)
        config_class, settings = CONFIGS[family]
        labels = {"id2label": dict(enumerate(LABELS)), "label2id": {label: i for i, label in enumerate(LABELS)}}
        if problem == "regression":
            labels = {"num_labels": 1}
        config = getattr(transformers, config_class)(**settings, **({} if "QuestionAnswering" in class_name
                                                                     or "MaskedLM" in class_name else labels))
        config.problem_type = problem
        model = getattr(transformers, class_name)(config).eval()
        with torch.no_grad():  # non-zero biases and LayerNorms, so that a dropped one shows
            for parameter_name, parameter in model.named_parameters():
                if "position_embeddings" not in parameter_name or family != "distilbert":  # sinusoidal: kept
                    parameter.add_(0.2 * torch.randn_like(parameter))
        model.save_pretrained(folder / name)
        vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"word{i}" for i in range(config.vocab_size - 5)]
        (folder / name / "vocab.txt").write_text("".join(f"{token}\n" for token in vocabulary))
        np.savez(folder / f"{name}.npz", **outputs(model, family))


def run(folders):
    import transformers

    for folder in map(pathlib.Path, folders):
        config = json.loads((folder / "config.json").read_text())
        model_class = getattr(transformers, config["architectures"][0])
        model, loading = model_class.from_pretrained(folder, output_loading_info=True)
        np.savez(folder / "hf_outputs.npz", problem_type=str(model.config.problem_type),
                 missing=np.array(sorted(loading["missing_keys"]), str),
                 unexpected=np.array(sorted(loading["unexpected_keys"]), str),
                 **outputs(model.eval(), config["model_type"]))


if __name__ == "__main__":
    {"make": lambda args: make(args[0]), "run": run}[sys.argv[1]](sys.argv[2:])

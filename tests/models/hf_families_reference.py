"""Hugging Face's side of the family tests (`test_hf_families.py`), run in a process of its own (torch +
transformers, never beside TensorFlow):

    python hf_families_reference.py make FOLDER    # a tiny random base model of each family in FOLDER/<family>/
                                                   # (`save_pretrained`), its outputs in FOLDER/<family>.npz
    python hf_families_reference.py run FOLDER...  # `AutoModel.from_pretrained` of each folder: its outputs and
                                                   # the weights it did not find or did not use, in
                                                   # FOLDER/hf_outputs.npz

Outputs are on `inputs(family)`, in eval mode: padded singles and pairs.
"""

import json
import pathlib
import sys

import numpy as np

FAMILIES = ("bert", "roberta", "albert", "electra", "distilbert")
# Tiny configs (a 37-wide feed-forward and 4 heads catch layout mistakes), each with its family's own settings:
# RoBERTa's positions offset by its padding id 1 and one token type, ALBERT's narrower embedding and 3 blocks
# sharing 2 groups of weights with the tanh GELU, ELECTRA's narrower embedding, DistilBERT's sinusoidal table.
SHARED = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
              max_position_embeddings=16)
CONFIGS = {
    "bert": ("BertConfig", SHARED),
    "roberta": ("RobertaConfig", {**SHARED, "max_position_embeddings": 18, "type_vocab_size": 1, "pad_token_id": 1,
                                  "layer_norm_eps": 1e-5}),
    "albert": ("AlbertConfig", {**SHARED, "embedding_size": 16, "num_hidden_layers": 3, "num_hidden_groups": 2,
                                "hidden_act": "gelu_new"}),
    "electra": ("ElectraConfig", {**SHARED, "embedding_size": 16}),
    "distilbert": ("DistilBertConfig", dict(vocab_size=100, dim=32, n_layers=2, n_heads=4, hidden_dim=37,
                                            max_position_embeddings=16, sinusoidal_pos_embds=True)),
}
PAD_IDS = {"roberta": 1}  # the others pad with 0
# (first text, second text or None): [CLS] first [SEP] (second [SEP]); ids from 2 on, never a padding id.
TEXTS = [([11, 12, 13, 14, 15, 16], None), ([21, 22], None), ([31, 32], [41, 42, 43]), ([51], [61]),
         ([71, 72, 73, 74], [81, 82, 83])]
LENGTH = 11


def inputs(family):
    """`(input_ids, token_type_ids, attention_mask)` of `TEXTS`, padded to `LENGTH` with the family's padding id;
    the second text's token type 1 where the family has token types for it (not RoBERTa's one, not DistilBERT)."""
    pad = PAD_IDS.get(family, 0)
    ids, types, mask = (np.full((len(TEXTS), LENGTH), value, "int32") for value in (pad, 0, 0))
    for row, (first, second) in enumerate(TEXTS):
        tokens = [2, *first, 3] + ([*second, 3] if second else [])
        ids[row, :len(tokens)], mask[row, :len(tokens)] = tokens, 1
        if second and family not in ("roberta", "distilbert"):
            types[row, len(first) + 2:len(tokens)] = 1
    return ids, types, mask


def outputs(model, family):
    """`last_hidden_state` (and `pooler_output` where the model has one) on `inputs(family)`."""
    import torch

    ids, types, mask = (torch.tensor(array, dtype=torch.long) for array in inputs(family))
    extra = {} if family == "distilbert" else {"token_type_ids": types}
    with torch.no_grad():
        result = model(input_ids=ids, attention_mask=mask, **extra)
    arrays = {"last_hidden_state": result.last_hidden_state.numpy()}
    if getattr(result, "pooler_output", None) is not None:
        arrays["pooler_output"] = result.pooler_output.numpy()
    return arrays


def make(folder):
    import torch
    import transformers

    folder = pathlib.Path(folder)
    for index, family in enumerate(FAMILIES):
        torch.manual_seed(index)
        config_class, settings = CONFIGS[family]
        model = transformers.AutoModel.from_config(getattr(transformers, config_class)(**settings)).eval()
        with torch.no_grad():  # non-zero biases and LayerNorms, so that a dropped one shows
            for name, parameter in model.named_parameters():
                if name != "embeddings.position_embeddings.weight" or family != "distilbert":  # sinusoidal: kept
                    parameter.add_(0.2 * torch.randn_like(parameter))
        model.save_pretrained(folder / family)
        np.savez(folder / f"{family}.npz", **outputs(model, family))


def run(folders):
    import transformers

    for folder in map(pathlib.Path, folders):
        family = json.loads((folder / "config.json").read_text())["model_type"]
        model, loading = transformers.AutoModel.from_pretrained(folder, output_loading_info=True)
        np.savez(folder / "hf_outputs.npz", model_class=type(model).__name__,
                 missing=np.array(sorted(loading["missing_keys"]), str),
                 unexpected=np.array(sorted(loading["unexpected_keys"]), str),
                 **outputs(model.eval(), family))


if __name__ == "__main__":
    {"make": lambda args: make(args[0]), "run": run}[sys.argv[1]](sys.argv[2:])

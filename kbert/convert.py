"""The only module that knows Hugging Face's names: BERT checkpoints in, kbert weights out.

Reads `config.json` and `model.safetensors` with the `safetensors` numpy reader, so no
torch is needed, and refuses pickled `pytorch_model.bin` files (unpickling runs code).
"""

import json
import pathlib

import numpy as np

from kbert.config import BertConfig

# Hugging Face config key -> BertConfig field.
_CONFIG_FIELDS = {
    "vocab_size": "vocabulary_size",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "hidden_size": "hidden_dim",
    "intermediate_size": "intermediate_dim",
    "max_position_embeddings": "max_sequence_length",
    "type_vocab_size": "num_segments",
    "hidden_dropout_prob": "dropout",
    "layer_norm_eps": "layer_norm_epsilon",
    "initializer_range": "initializer_range",
}
# Keys that must hold this value, or the checkpoint is not the BERT we build.
_REQUIRED_VALUES = {
    "model_type": "bert",
    "hidden_act": "gelu",
    "position_embedding_type": "absolute",
}
# Bookkeeping and generation keys that do not change the encoder's function.
_IGNORED_KEYS = {
    "_name_or_path", "architectures", "transformers_version", "torch_dtype", "dtype",
    "gradient_checkpointing", "use_cache", "pad_token_id", "bos_token_id", "eos_token_id",
    "attention_probs_dropout_prob", "classifier_dropout", "id2label", "label2id",
    "output_attentions", "output_hidden_states", "return_dict", "is_decoder",
    "add_cross_attention", "chunk_size_feed_forward", "tie_word_embeddings",
    "problem_type", "finetuning_task", "tokenizer_class", "prefix", "task_specific_params",
}
# Weights a BERT checkpoint may carry that the backbone has no use for.
_UNUSED_WEIGHTS = ("embeddings.position_ids", "cls.")


def read_hf_config(path):
    """Reads a Hugging Face BERT `config.json` into a `BertConfig`.

    Unknown keys and unsupported values (another activation or position type) raise,
    naming the file, rather than building a model that computes something else.

    Example:
    >>> from kbert.paths import minilm_dir
    >>> read_hf_config(minilm_dir()).hidden_dim
    384
    """
    file = _checkpoint_folder(path) / "config.json"
    if not file.is_file():
        raise FileNotFoundError(f"{file}: no config.json in the checkpoint folder.")
    values = json.loads(file.read_text())
    for key, expected in _REQUIRED_VALUES.items():
        if key in values and values[key] != expected:
            raise ValueError(f"{file}: {key}={values[key]!r} is not supported; kbert needs {expected!r}.")
    unknown = sorted(set(values) - set(_CONFIG_FIELDS) - set(_REQUIRED_VALUES) - _IGNORED_KEYS)
    if unknown:
        raise ValueError(f"{file}: unknown config field(s) {unknown}; kbert does not know what they change.")
    missing = sorted(set(_CONFIG_FIELDS) - set(values) - {"hidden_dropout_prob", "layer_norm_eps", "initializer_range"})
    if missing:
        raise ValueError(f"{file}: missing config field(s) {missing}.")
    return BertConfig(**{field: values[key] for key, field in _CONFIG_FIELDS.items() if key in values})


def read_hf_weights(path):
    """Reads `model.safetensors` from a checkpoint folder as a dict of numpy arrays."""
    from safetensors.numpy import load_file

    folder = _checkpoint_folder(path)
    file = folder / "model.safetensors"
    if not file.is_file():
        pickled = [p.name for p in folder.glob("*.bin")]
        hint = (
            f" It holds {pickled}: pickled torch files run code when loaded, so kbert does not read "
            "them; convert once with `safetensors` in a trusted environment." if pickled else ""
        )
        raise FileNotFoundError(f"{file}: no model.safetensors in the checkpoint folder.{hint}")
    weights = load_file(str(file))
    # BertForPreTraining and task checkpoints prefix the encoder with "bert.".
    return {key.removeprefix("bert."): value for key, value in weights.items()}


def hf_to_kbert_weights(hf_weights, num_layers):
    """Maps Hugging Face BERT weight names and layouts to kbert variable paths.

    Dense kernels are transposed (torch stores (out, in)); query, key and value are
    concatenated into the fused `qkv_dense`.
    """
    def take(key):
        if key not in hf_weights:
            raise KeyError(key)
        return np.asarray(hf_weights[key])

    def dense(hf_name, kbert_name):
        return {
            f"{kbert_name}/kernel": take(f"{hf_name}.weight").T,
            f"{kbert_name}/bias": take(f"{hf_name}.bias"),
        }

    def layer_norm(hf_name, kbert_name):
        return {
            f"{kbert_name}/gamma": take(f"{hf_name}.weight"),
            f"{kbert_name}/beta": take(f"{hf_name}.bias"),
        }

    weights = {
        "token_embedding/embeddings": take("embeddings.word_embeddings.weight"),
        "segment_embedding/embeddings": take("embeddings.token_type_embeddings.weight"),
        "position_embedding/embeddings": take("embeddings.position_embeddings.weight"),
        **layer_norm("embeddings.LayerNorm", "embeddings_layer_norm"),
        **dense("pooler.dense", "pooled_dense"),
    }
    for i in range(num_layers):
        hf, kb = f"encoder.layer.{i}", f"transformer_layer_{i}"
        qkv = [f"{hf}.attention.self.{part}" for part in ("query", "key", "value")]
        weights[f"{kb}/self_attention/qkv_dense/kernel"] = np.concatenate(
            [take(f"{name}.weight").T for name in qkv], axis=1
        )
        weights[f"{kb}/self_attention/qkv_dense/bias"] = np.concatenate(
            [take(f"{name}.bias") for name in qkv]
        )
        weights.update(dense(f"{hf}.attention.output.dense", f"{kb}/self_attention/output_dense"))
        weights.update(layer_norm(f"{hf}.attention.output.LayerNorm", f"{kb}/attention_layer_norm"))
        weights.update(dense(f"{hf}.intermediate.dense", f"{kb}/intermediate_dense"))
        weights.update(dense(f"{hf}.output.dense", f"{kb}/output_dense"))
        weights.update(layer_norm(f"{hf}.output.LayerNorm", f"{kb}/output_layer_norm"))
    return weights


def assign_weights(backbone, weights, source="weights"):
    """Assigns a {variable path: array} dict to a backbone: all of it or nothing.

    Every variable must get a value of its exact shape, and every value a variable.
    """
    variables = {v.path.removeprefix(f"{backbone.name}/"): v for v in backbone.weights}
    missing = sorted(set(variables) - set(weights))
    unexpected = sorted(set(weights) - set(variables))
    if missing or unexpected:
        raise ValueError(f"{source}: missing weights {missing[:5]}, unexpected weights {unexpected[:5]}.")
    for path, value in weights.items():
        if tuple(variables[path].shape) != value.shape:
            raise ValueError(
                f"{source}: weight {path} has shape {value.shape}; the model expects "
                f"{tuple(variables[path].shape)}."
            )
    for path, value in weights.items():
        variables[path].assign(value)


def load_hf_weights(backbone, path):
    """Loads a Hugging Face BERT checkpoint folder into a `kbert.BertBackbone`."""
    file = _checkpoint_folder(path) / "model.safetensors"
    hf_weights = read_hf_weights(path)
    unused = sorted(k for k in hf_weights if not k.startswith(("encoder.", "embeddings.", "pooler."))
                    and not k.startswith(_UNUSED_WEIGHTS))
    if unused:
        raise ValueError(f"{file}: weights {unused[:5]} are not part of a BERT encoder.")
    try:
        weights = hf_to_kbert_weights(hf_weights, backbone.num_layers)
    except KeyError as error:
        raise ValueError(f"{file}: missing weight {error.args[0]!r}.") from None
    known = _hf_names(backbone.num_layers)
    extra = sorted(k for k in hf_weights if k not in known and not k.startswith(_UNUSED_WEIGHTS))
    if extra:
        raise ValueError(f"{file}: weights {extra[:5]} do not fit a {backbone.num_layers}-layer BERT.")
    assign_weights(backbone, weights, source=str(file))


def _hf_names(num_layers):
    names = {
        f"embeddings.{part}.weight" for part in
        ("word_embeddings", "token_type_embeddings", "position_embeddings")
    } | {"embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias",
         "pooler.dense.weight", "pooler.dense.bias"}
    for i in range(num_layers):
        for part in ("attention.self.query", "attention.self.key", "attention.self.value",
                     "attention.output.dense", "attention.output.LayerNorm",
                     "intermediate.dense", "output.dense", "output.LayerNorm"):
            names |= {f"encoder.layer.{i}.{part}.weight", f"encoder.layer.{i}.{part}.bias"}
    return names


def _checkpoint_folder(path):
    folder = pathlib.Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: checkpoint folder not found.")
    return folder

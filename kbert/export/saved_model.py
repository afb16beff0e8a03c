"""SavedModel export: `serving_default` on raw strings, `token_ids` on token ids."""

import json
import pathlib

from kbert.export.loading import require_tensorflow_backend
from kbert.export.serving import serving_functions

EXPORT_FILE = "export.json"


def export_saved_model(model, tokenizer, spec, out, text_model=True):
    """Writes a SavedModel of `model` with its tokenizer in the graph to the folder `out`.

    The folder appears whole or not at all (built beside `out`, then renamed). It holds the
    SavedModel, the tokenizer's files (`vocab.txt`, ALBERT's `spiece.model` or RoBERTa's `vocab.json` and
    `merges.txt`) and `tokenizer_config.json` (for callers that tokenize themselves) and `export.json`
    (the `ExportSpec`, the tokenizer and the signatures).

    Args:
        model: a kbert task model or backbone, loaded under the TensorFlow backend.
        tokenizer: its tokenizer (`kbert.text.BertTokenizer`, `SentencePieceTokenizer` or `ByteLevelBPETokenizer`).
        spec: `kbert.export.serving.ExportSpec`.
        out: path of the folder to write.
        text_model: bool. Also the string-in signature `serving_default`; RoBERTa's tokenizer has no graph op, so
            its SavedModel is the `token_ids` signature alone (`text_model=False`, which Keras's `ExportArchive` also
            names `serving_default`; True raises an ExportError).

    Returns: the path written.

    Example (not run here: TensorFlow backend only)::

        model, tokenizer, spec = load_exportable("saved_models/sst2")
        export_saved_model(model, tokenizer, spec, "exports/sst2")
        served = tf.saved_model.load("exports/sst2").signatures["serving_default"]
        served(texts=tf.constant(["a gripping film"]))["label"]
    """
    from kbert.saving import atomic_output_folder, remove_leftovers

    require_tensorflow_backend()
    functions = serving_functions(model, tokenizer, spec, text_model=text_model)
    remove_leftovers(out)  # a killed export's .NAME.partial-* folder (25 MB for MiniLM)
    with atomic_output_folder(out) as folder:
        write_saved_model(functions, folder)
        tokenizer.save(folder)
        write_export_json(folder, model, tokenizer, spec, {name: _signature_summary(function)
                                         for name, function in functions.items()}, "saved_model")
    return pathlib.Path(out)


def write_saved_model(functions, folder):
    """Writes `functions` as the SavedModel's signatures, through Keras's `ExportArchive`.

    The archive keeps the variables the functions use, so that the TFLite converter freezes
    them (a plain `tf.Module` holding the model left them as resource variables, which ran
    as NaN). The model is not `track`ed as well: that would store every weight a second
    time, under other keys (keras-team/keras#23553).
    """
    import keras

    archive = keras.export.ExportArchive()
    for name, function in functions.items():
        archive.add_endpoint(name, function)
    archive.write_out(str(folder), verbose=False)


def is_export_folder(path):
    """Whether `path` is a folder that kbert's export wrote (it holds `export.json`)."""
    return (pathlib.Path(path) / EXPORT_FILE).is_file()


def write_export_json(folder, model, tokenizer, spec, signatures, fmt, **extra):
    """`export.json`: the format, the `ExportSpec`, the rows of the model's token embeddings (`vocabulary_size`:
    the edge runner refuses a tokenizer or token ids beyond them), the tokenizer (`tokenizer`: its `kind`, as
    `kbert.text.hf_tokenizers.KIND_FILES`, and `files`, written beside), the signatures and `extra`."""
    from kbert.text.hf_tokenizers import tokenizer_files

    backbone = getattr(model, "backbone", model)
    content = {"format": fmt, **spec.to_dict(), "vocabulary_size": backbone.vocabulary_size,
               "tokenizer": {"kind": tokenizer.kind, "files": list(tokenizer_files(tokenizer))},
               "signatures": signatures, **extra}
    (pathlib.Path(folder) / EXPORT_FILE).write_text(json.dumps(content, indent=2))


def _signature_summary(function):
    concrete = function.get_concrete_function()
    inputs = {spec.name: [spec.dtype.name, spec.shape.as_list()]
              for spec in concrete.structured_input_signature[0]}
    outputs = {name: [value.dtype.name, value.shape.as_list()]
               for name, value in concrete.structured_outputs.items()}
    return {"inputs": inputs, "outputs": outputs}

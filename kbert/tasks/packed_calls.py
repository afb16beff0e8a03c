"""Tasks' answers computed on packed rows (`kbert_core.packed_rows`, `BertBackbone.packed_outputs`): texts of mixed
lengths end to end in rows, with almost no padding; each text's answer read from its own tokens."""

import numpy as np
from keras import ops

from kbert.config import DEFAULT_BATCH_SIZE
from kbert_core.packed_rows import packed_inputs


def worth_packing(inputs):
    """Whether packed rows save anything over padded batches for `inputs` (a `Prepared`'s): not for a lone text, whose
    packed row is its padded one, and the padded call (the model's compiled path) the faster.

    Example:
    >>> worth_packing({"token_ids": np.ones((1, 5))}), worth_packing({"token_ids": np.ones((2, 5))})
    (False, True)
    """
    return len(inputs["token_ids"]) > 1


def packed_sequences(backbone, inputs, batch_size=None, row_length=None):
    """Each text's vectors from packed rows: a list, one float32 array (its tokens, hidden) per row of `inputs`.

    Args:
        backbone: `kbert.BertBackbone`.
        inputs: dict of int arrays (texts, length), `token_ids`, `segment_ids`, `padding_mask` (a `Prepared`'s;
            pairs too: a row keeps its segment ids).
        batch_size: int or None (32). Packed rows per backbone call.
        row_length: int or None. Tokens per packed row; None, the longest text's.

    Example:
    >>> from kbert import BertBackbone
    >>> backbone = BertBackbone.from_preset("bert_tiny", num_layers=1)
    >>> mask = np.array([[1, 1, 1], [1, 1, 0]], "int32")
    >>> [v.shape for v in packed_sequences(backbone, {"token_ids": mask + 1, "segment_ids": 0 * mask,
    ...                                               "padding_mask": mask}, row_length=6)]
    [(3, 128), (2, 128)]
    """
    packed, spans = packed_inputs(inputs, row_length)
    batch_size = batch_size or DEFAULT_BATCH_SIZE
    rows = [ops.convert_to_numpy(ops.cast(backbone.packed_outputs(
        {key: value[start : start + batch_size] for key, value in packed.items()})["sequence_output"], "float32"))
        for start in range(0, len(packed["token_ids"]), batch_size)]
    rows = np.concatenate(rows)
    return [rows[row, column : column + n] for row, column, n in spans.tolist()]

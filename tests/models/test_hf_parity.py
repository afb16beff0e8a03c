"""kbert against Hugging Face `transformers` on the real all-MiniLM-L6-v2 checkpoint."""

import numpy as np
import pytest
from keras import ops

from kbert import BertBackbone, mean_pool

# Real sentences of very different lengths, so the batch carries a lot of padding.
SENTENCES = [
    "A man is playing a guitar.",
    "The film is a charming, if slight, comedy about friendship and second chances.",
    "Ok.",
    "In 1897 the expedition reached the coast of Greenland, where the ice had retreated "
    "further than any of the sailors could remember; they stayed until the first snow.",
    "Zürich's café served crème brûlée to 12 guests at 9:30 p.m.",
]
PAIRS = [
    ["A soccer game with multiple males playing.", "Some men are playing a sport."],
    ["A black race car starts up in front of a crowd of people.", "A man is driving down a lonely road."],
]


@pytest.fixture(scope="module")
def backbone(minilm_dir):
    return BertBackbone.from_preset("all_minilm_l6_v2")


@pytest.fixture(scope="module")
def single_reference(hf_reference):
    return hf_reference(SENTENCES)


def model_inputs(reference):
    return {k: reference[k] for k in ("token_ids", "segment_ids", "padding_mask")}


def max_difference_at_real_positions(kbert_out, reference):
    mask = reference["padding_mask"].astype(bool)
    sequence = np.abs(ops.convert_to_numpy(kbert_out["sequence_output"]) - reference["sequence_output"])
    pooled = np.abs(ops.convert_to_numpy(kbert_out["pooled_output"]) - reference["pooled_output"])
    return sequence[mask].max(), pooled.max()


def test_matches_transformers_on_a_padded_batch(backbone, single_reference):
    reference = single_reference
    assert reference["padding_mask"].min() == 0, "the batch should hold padding"
    out = backbone(model_inputs(reference))
    sequence, pooled = max_difference_at_real_positions(out, reference)
    assert sequence <= 1e-4 and pooled <= 1e-4, (sequence, pooled)


def test_matches_transformers_on_sentence_pairs(backbone, hf_reference):
    reference = hf_reference(PAIRS)
    assert reference["segment_ids"].max() == 1
    out = backbone(model_inputs(reference))
    sequence, pooled = max_difference_at_real_positions(out, reference)
    assert sequence <= 1e-4 and pooled <= 1e-4, (sequence, pooled)


def test_mean_pooled_embeddings_match_sentence_transformers(backbone, single_reference):
    reference = single_reference
    inputs = model_inputs(reference)
    embeddings = ops.convert_to_numpy(
        mean_pool(backbone(inputs)["sequence_output"], inputs["padding_mask"])
    )
    cosine = np.sum(embeddings * reference["sentence_embedding"], axis=-1)
    assert cosine.min() >= 0.9999, cosine

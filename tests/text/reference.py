"""Comparisons with Hugging Face `tokenizers`, the independent reference."""


def rows(outputs):
    """Unpadded token ids and offsets of each row, as lists."""
    lengths = outputs["padding_mask"].sum(axis=1)
    ids = [row[:n].tolist() for row, n in zip(outputs["token_ids"], lengths)]
    if "offsets" not in outputs:
        return ids
    return ids, [[tuple(o) for o in row[:n].tolist()] for row, n in zip(outputs["offsets"], lengths)]


def assert_same_as_hf(tokenizer, hf_tokenizer, texts):
    """Token ids, offsets and word ids equal Hugging Face's on every text (no truncation)."""
    outputs = tokenizer(texts, max_length=1_000_000, padding="longest", return_offsets=True)
    ids, offsets = rows(outputs)
    references = hf_tokenizer.encode_batch(texts)
    bad = [i for i, reference in enumerate(references) if ids[i] != reference.ids]
    assert not bad, f"{len(bad)}/{len(texts)} differ, e.g. {texts[bad[0]]!r}"
    bad = [i for i, reference in enumerate(references) if offsets[i] != reference.offsets]
    assert not bad, f"{len(bad)}/{len(texts)} offsets differ, e.g. {texts[bad[0]]!r}"
    lengths = outputs["padding_mask"].sum(axis=1)
    for i, reference in enumerate(references):
        expected = [-1 if w is None else w for w in reference.word_ids]
        assert outputs["word_ids"][i][: lengths[i]].tolist() == expected, texts[i]

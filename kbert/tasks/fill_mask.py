"""`BertPretrainer.fill_mask`: Hugging Face's fill-mask pipeline on a kbert masked-LM head, the same candidates, scores
and sequences.

A text writes its tokenizer's mask token ("[MASK]"; RoBERTa's "<mask>") where a token is to be guessed. The text is
cut at each mask token and each piece tokenized alone, as Hugging Face's tokenizers read a special token typed in a
text; each masked position's logits become probabilities over the whole vocabulary (a softmax in float32), of which
the `top_k` highest (or those of `targets`) are returned with the text that each makes (`decode`).
"""

import warnings

import numpy as np

from kbert.layers.span_boundary_head import SPAN_BOUNDARY_KEYS
from kbert.tasks.bert_preprocessor import text_list
from kbert_core.classification import best_first


def fill_mask(pretrainer, texts, top_k=5, targets=None, batch_size=32):
    """What `BertPretrainer.fill_mask` returns (see there)."""
    single = isinstance(texts, str)
    texts = text_list(texts)
    tokenizer = pretrainer.preprocessor.tokenizer
    rows = masked_rows(tokenizer, texts, pretrainer.backbone.max_sequence_length)
    candidates = None if targets is None else target_ids(tokenizer, targets)
    top_k = min(top_k, tokenizer.vocabulary_size if candidates is None else len(candidates))
    results = [None] * len(rows)
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))  # batches of similar length
    for start in range(0, len(order), batch_size):
        batch = order[start:start + batch_size]
        for i, positions, probabilities in zip(batch, *mask_probabilities(pretrainer, [rows[i] for i in batch])):
            results[i] = propositions(tokenizer, rows[i], positions, probabilities, top_k, candidates)
    return results[0] if single else results


def mask_answers(pretrainer, texts, top_k=5, targets=None, batch_size=32):
    """`fill_mask`'s answers in one shape whatever the number of masks, as the app and the server give them: for
    each text, {"text", "masks"}, a list per mask of its candidates.

    Example:
    >>> from kbert import BertPretrainer
    >>> [answer] = mask_answers(BertPretrainer.from_preset("bert_tiny"), ["a [MASK] film"], top_k=2)
    >>> answer["text"], len(answer["masks"]), len(answer["masks"][0])
    ('a [MASK] film', 1, 2)
    """
    texts = text_list(texts)
    answers = fill_mask(pretrainer, texts, top_k, targets, batch_size)
    return [{"text": text, "masks": answer if isinstance(answer[0], list) else [answer]}
            for text, answer in zip(texts, answers)]


def masked_rows(tokenizer, texts, max_length):
    """Each text's token ids, `[CLS] pieces and mask tokens [SEP]` (the tokenizer's own first and last tokens); a
    ValueError names a text with no mask token, or one longer than the model reads (`max_length` tokens)."""
    mask = tokenizer.id_to_token(tokenizer.mask_token_id)
    pieces = [text.split(mask) for text in texts]
    for i, parts in enumerate(pieces):
        if len(parts) == 1:
            raise ValueError(f"texts[{i}] ({texts[i][:60]!r}) has no mask token: write {mask} where a token is to "
                             "be filled in.")
    piece_ids = iter(ids_of(tokenizer, [piece for parts in pieces for piece in parts]))
    rows = []
    for i, parts in enumerate(pieces):
        row = [tokenizer.cls_token_id]
        for j in range(len(parts)):
            row += ([tokenizer.mask_token_id] if j else []) + next(piece_ids)
        row.append(tokenizer.sep_token_id)
        if len(row) > max_length:
            raise ValueError(f"texts[{i}] ({texts[i][:60]!r}) is {len(row)} tokens long; the model reads "
                             f"{max_length} at most (max_sequence_length).")
        rows.append(row)
    return rows


def ids_of(tokenizer, texts):
    """Each text's token ids, whole, without the first and last tokens the tokenizer adds ([CLS], [SEP])."""
    encoded = tokenizer(texts, max_length=1_000_000, padding="longest")
    return [row[1:n - 1].tolist() for row, n in zip(encoded["token_ids"], encoded["padding_mask"].sum(axis=1))]


def target_ids(tokenizer, targets):
    """The ids of `targets` (a token or a list of them), ascending: a token of the vocabulary, or else the first
    token of its text, with a warning (as Hugging Face's pipeline); a ValueError if none is left."""
    vocabulary = {token: i for i, token in enumerate(tokenizer.vocabulary())}
    found = set()
    for target in [targets] if isinstance(targets, str) else targets:
        if target in vocabulary:
            found.add(vocabulary[target])
            continue
        [ids] = ids_of(tokenizer, [target])
        if not ids:
            warnings.warn(f"The target {target!r} has no token: left out.", stacklevel=4)
            continue
        warnings.warn(f"The target {target!r} is not in the vocabulary: scored as its first token "
                      f"{tokenizer.id_to_token(ids[0])!r}.", stacklevel=4)
        found.add(ids[0])
    if not found:
        raise ValueError(f"None of the targets {targets!r} gives a token to score.")
    return np.array(sorted(found))


def mask_probabilities(pretrainer, rows):
    """For each row (token ids), its mask tokens' positions, and their probabilities over the vocabulary (masks,
    vocabulary)."""
    tokenizer = pretrainer.preprocessor.tokenizer
    length = max(map(len, rows))
    masks = [[j for j, token in enumerate(row) if token == tokenizer.mask_token_id] for row in rows]
    inputs = {"token_ids": np.full((len(rows), length), tokenizer.pad_token_id, "int32"),
              "segment_ids": np.zeros((len(rows), length), "int32"),
              "padding_mask": np.zeros((len(rows), length), "int32"),
              "mask_positions": np.zeros((len(rows), max(map(len, masks))), "int32")}
    for i, (row, positions) in enumerate(zip(rows, masks)):
        inputs["token_ids"][i, :len(row)], inputs["padding_mask"][i, :len(row)] = row, 1
        inputs["mask_positions"][i, :len(positions)] = positions
    for key in SPAN_BOUNDARY_KEYS if pretrainer.span_boundary else ():  # the span-boundary head's, unread
        inputs[key] = np.zeros_like(inputs["mask_positions"])
    logits = np.asarray(pretrainer.predict_on_batch(inputs)["mlm"], "float32")
    probabilities = []
    for i, positions in enumerate(masks):
        scores = np.exp(logits[i, :len(positions)] - logits[i, :len(positions)].max(axis=-1, keepdims=True))
        probabilities.append(scores / scores.sum(axis=-1, keepdims=True))
    return masks, probabilities


def propositions(tokenizer, row, positions, probabilities, top_k, candidates):
    """Hugging Face's fill-mask answer for one text: for each mask, its `top_k` tokens as {"score", "token",
    "token_str", "sequence"} (the text with that token in the mask's place, padding left out; the special tokens too
    where the text has one mask); the list of them where it has one mask, else a list of such lists."""
    single = len(positions) == 1
    answer = []
    for position, scores in zip(positions, probabilities):
        if candidates is not None:
            scores = scores[candidates]
        best = best_first(scores, top_k)
        found = []
        for k in best:
            token = int(k if candidates is None else candidates[k])
            filled = [token if j == position else i for j, i in enumerate(row)]
            filled = [i for i in filled if i != tokenizer.pad_token_id]
            found.append({"score": float(scores[k]), "token": token, "token_str": tokenizer.decode([token]),
                          "sequence": tokenizer.decode(filled, skip_special_tokens=single)})
        answer.append(found)
    return answer[0] if single else answer

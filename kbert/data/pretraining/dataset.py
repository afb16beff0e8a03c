"""The tf.data pipeline of BERT pretraining: text files to masked `(x, y, sample_weight)` batches."""

import functools
import itertools

import numpy as np

from kbert.config import DEFAULT_SEQUENCE_LENGTH
from kbert.data.pretraining.instances import OBJECTIVES, document_instances, read_documents
from kbert.data.pretraining.masking import check_masking, mask_batch, prediction_slots
from kbert.data.readers.text_file import check_utf8
from kbert.layers.span_boundary_head import SPAN_BOUNDARY_KEYS
from kbert.start_up import import_tensorflow

tf = import_tensorflow()  # quietly; under torch or JAX, off the GPUs

MASKINGS = ("dynamic", "static")


def pretraining_dataset(paths, tokenizer, batch_size, max_seq_length=DEFAULT_SEQUENCE_LENGTH, objective="nsp",
                        masking="dynamic", duplication_factor=10, mask_unit="token", span_p=0.2, max_span=10,
                        span_boundaries=False, mask_rate=0.15, max_predictions=None, short_seq_prob=0.1, repeat=True,
                        shuffle_buffer=10000, window_chars=4_000_000, cache=None, holdout=0.0,
                        held_out=False, seed=None, skip_batches=0):
    """Streams BERT pretraining batches from text files, for `BertPretrainer.fit`.

    Files hold one sentence or paragraph per line (paragraphs are sentence-split) and a blank
    line between documents; several files interleave document by document, and `holdout`
    holds a share of the text out (`read_documents`). A Python generator inside tf.data
    reads a window of documents at a time (`window_chars` characters: memory stays bounded
    whatever the size of the corpus or the number of files), tokenizes them and makes
    pairs (`document_instances`); tf.data shuffles, batches and masks (`mask_batch`).
    Dynamic masking draws fresh masks (and fresh pairs) on every pass over the corpus;
    static masking draws `duplication_factor` masked copies of each pair once and caches them
    (in memory, or in the file `cache`). Batches are `(x, y, sample_weight)`: x holds
    `token_ids`, `segment_ids`, `padding_mask` and `mask_positions`; y holds `mlm` (the
    original ids at the masked positions) and `nsp` (0 = B follows A); the sample weight
    of `mlm` is `mask_weights`. Batches come out as TensorFlow tensors; Keras's `fit` turns
    them into numpy for JAX and PyTorch.

    Args:
        paths: list of str or path. The text files.
        tokenizer: `kbert.text.BertTokenizer`.
        batch_size: int. Rows per batch (the last partial batch is dropped).
        max_seq_length: int. Tokens per row, special tokens included.
        objective: str. "nsp" (next sentence), "sop" (ALBERT's sentence order) or "mlm" (one
            segment per row, no `nsp` target).
        masking: str. "dynamic" or "static".
        duplication_factor: int. Masked copies per pair with static masking.
        mask_unit: str. What is masked: "token", "whole_word" (all the WordPieces of a word together) or
            "span" (SpanBERT's spans of whole words, `span_p` and `max_span` their lengths' distribution).
        span_p, mask_rate, max_predictions: see `mask_batch`. `max_predictions` None: as many as a row
            can get (`prediction_slots(max_seq_length, mask_rate)`: 10 at 64 tokens, 19 at 128).
        span_boundaries: bool. With "span": x also holds `span_left`, `span_right` and `span_offset`, and y
            `sbo` (the `mlm` targets and weights again), for `BertPretrainer(span_boundary=True)`.
        short_seq_prob: float. Probability of a shorter target length (see
            `document_instances`).
        repeat: bool. Loop over the corpus forever (train) or once (evaluation: one pass up
            front counts the batches, to give the dataset its length).
        shuffle_buffer: int. Pairs in the shuffle buffer, at most: never more than one pass over the corpus
            can make (`rows_a_pass_makes`), since tf.data fills the buffer before the first batch (a tiny
            corpus repeated into 10,000 pairs took 10 s to start). 0 keeps the corpus order.
        window_chars: int. Characters of text read at once (whole documents); random second
            segments come from the same window (or the previous one).
        cache: None or str. File prefix for the static-masking cache.
        holdout: float in [0, 1]. The share of the text held out for evaluation (see
            `read_documents`); 0 reads it all.
        held_out: bool. Read the held-out share instead of the rest.
        seed: int or None. Seeds the interleaving of files, pairing, shuffling and masking;
            None draws a fresh one. The shuffle (tf.data's) also reads TensorFlow's global
            seed when one is set (`tf.random.set_seed`, `keras.utils.set_random_seed`).
        skip_batches: int. Batches to leave out at the start: a run resumed after `n` batches
            passes `n` and then reads, with the same seed, the batches the uninterrupted run
            would have read, masks included. The skipped batches are still read and paired (the
            cost of replaying them), not masked.

    Example:
    >>> import pathlib, tempfile
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"])
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "corpus.txt"
    >>> _ = path.write_text("A b a. B a b.\\nA a.\\n\\nB b b. A.\\n")
    >>> data = pretraining_dataset([path], tokenizer, batch_size=2, max_seq_length=8,
    ...                            max_predictions=2, repeat=False, seed=0)
    >>> x, y, weights = next(iter(data))
    >>> sorted(x), sorted(y), tuple(x["mask_positions"].shape)
    (['mask_positions', 'padding_mask', 'segment_ids', 'token_ids'], ['mlm', 'nsp'], (2, 2))
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}.")
    if masking not in MASKINGS:
        raise ValueError(f"masking must be one of {MASKINGS}, got {masking!r}.")
    check_masking(mask_unit, mask_rate, span_p, max_span)
    if span_boundaries and mask_unit != "span":
        raise ValueError(f"span_boundaries=True reads the boundaries of spans: give mask_unit='span', not "
                         f"{mask_unit!r}.")
    paths = [str(path) for path in ([paths] if isinstance(paths, str) else paths)]
    _check_corpus(paths, objective, holdout, held_out)
    seed = int(np.random.default_rng(seed).integers(2**31))
    max_predictions = max_predictions or prediction_slots(max_seq_length, mask_rate)
    special_ids, is_suffix, replacement_ids = masking_vocabulary(tokenizer)

    def instances():
        read = functools.partial(read_documents, paths, holdout, held_out)
        yield from _instances(read, tokenizer, max_seq_length, short_seq_prob, objective, seed,
                              repeat and masking == "dynamic", window_chars)

    row = tf.TensorSpec([max_seq_length], tf.int32)
    data = tf.data.Dataset.from_generator(instances, output_signature={
        "token_ids": row, "segment_ids": row, "padding_mask": row,
        "label": tf.TensorSpec([], tf.int32)})

    def mask(step, batch):
        masked = mask_batch(batch["token_ids"], batch["padding_mask"], tf.stack([seed, step]),
                            special_ids, is_suffix, tokenizer.mask_token_id, replacement_ids, mask_rate,
                            max_predictions, mask_unit, span_p, max_span)
        return {**batch, **masked}

    if masking == "static":
        data = data.flat_map(lambda row: tf.data.Dataset.from_tensors(row).repeat(duplication_factor))
        data = data.batch(1024).enumerate().map(mask).unbatch().cache(cache or "")
        if repeat:
            data = data.repeat()
    if shuffle_buffer:
        copies = duplication_factor if masking == "static" else 1
        rows = rows_a_pass_makes(paths, holdout, held_out, max_seq_length, at_most=-(-shuffle_buffer // copies))
        data = data.shuffle(min(shuffle_buffer, rows * copies), seed=seed)
    data = data.batch(batch_size, drop_remainder=True)
    if masking == "dynamic":  # masks seeded by the batch's number, counted before the skip
        data = data.enumerate().skip(skip_batches).map(mask, num_parallel_calls=tf.data.AUTOTUNE)
    else:
        data = data.skip(skip_batches)
    if not repeat:
        # Count the batches once (for static masking this pass fills the cache): on a dataset
        # of unknown length, Keras's TensorFlow trainer runs one more step, whose
        # `iterator.get_next()` raises OutOfRangeError, yet which still adds the static batch
        # size to the counts of the loss trackers and unweighted metrics (they do not depend
        # on the data): evaluate() reported the loss times n / (n + 1). A known cardinality
        # ends the loop after n steps.
        batches = int(data.reduce(0, lambda count, _: count + 1))
        data = data.apply(tf.data.experimental.assert_cardinality(batches))
    return data.map(lambda batch: _fit_layout(batch, objective, span_boundaries)).prefetch(tf.data.AUTOTUNE)


def rows_a_pass_makes(paths, holdout, held_out, max_seq_length, at_most):
    """An upper bound on the rows (pairs, or single segments) one pass over the corpus (its side of the held-out
    split) makes, counted up to `at_most`: each row takes at least one segment of its document, a sentence or a
    row-long piece of a longer one, and a token holds at least one character.

    Example:
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "corpus.txt"
    >>> _ = path.write_text("A b a. B a b.\\nA a.\\n\\nB b b b b b b b b b b. A.\\n")
    >>> rows_a_pass_makes([path], 0.0, False, max_seq_length=16, at_most=100)
    6
    >>> rows_a_pass_makes([path], 0.0, False, max_seq_length=16, at_most=4)
    4
    """
    rows, max_tokens = 0, max_seq_length - 3
    for document in read_documents(paths, holdout, held_out):
        rows += sum(1 + len(sentence) // max_tokens for sentence in document)
        if rows >= at_most:
            return at_most
    return rows


def held_out_then_training(paths, held_out_options=None, **training_options):
    """The held-out batches as one list (when `held_out_options` are given), then the training stream: the two
    `pretraining_dataset`s a pretraining run reads (`kbert.recipes.pretrain`), as numpy, from one pipeline, so
    that `process_batches` starts one process, and TensorFlow once, rather than twice.

    Example:
    >>> import pathlib, tempfile
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"])
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "corpus.txt"
    >>> _ = path.write_text("".join(" ".join("ab"[int(bit)] for bit in f"{i:06b}") + ". a b.\\n\\n" for i in range(40)))
    >>> options = dict(tokenizer=tokenizer, batch_size=2, max_seq_length=8, holdout=0.25, seed=0,
    ...                shuffle_buffer=0)
    >>> stream = held_out_then_training([path], dict(held_out=True, repeat=False, **options), **options)
    >>> held_out, first = next(stream), next(stream)
    >>> isinstance(held_out, list), first[0]["token_ids"].shape
    (True, (2, 8))
    """
    if held_out_options is not None:
        yield list(pretraining_dataset(paths, **held_out_options).as_numpy_iterator())
    yield from pretraining_dataset(paths, **training_options).as_numpy_iterator()


def _fit_layout(batch, objective, span_boundaries=False):
    x = {key: batch[key] for key in ("token_ids", "segment_ids", "padding_mask", "mask_positions",
                                     *(SPAN_BOUNDARY_KEYS if span_boundaries else ()))}
    y, weights = {"mlm": batch["mask_ids"]}, {"mlm": batch["mask_weights"]}
    if span_boundaries:  # SpanBERT's span-boundary objective predicts the same targets
        y["sbo"], weights["sbo"] = batch["mask_ids"], batch["mask_weights"]
    if objective != "mlm":
        y["nsp"] = batch["label"]
        weights["nsp"] = tf.ones_like(batch["label"], tf.float32)
    return x, y, weights


def _check_corpus(paths, objective, holdout, held_out):
    """Refuses, before training starts, a corpus with bytes that are not UTF-8 (naming the file
    and line), with no text (on the side of the held-out split read), or with one document for NSP."""
    for path in paths:
        check_utf8(path)
    documents = list(itertools.islice(read_documents(paths, holdout, held_out), 2))
    part = f"The held-out share ({holdout}) of the pretraining corpus {paths}" if held_out else (
        f"The pretraining corpus {paths}" + (f" less its held-out share ({holdout})" if holdout else ""))
    if not documents:
        raise ValueError(f"{part} holds no text.")
    if len(documents) == 1 and objective == "nsp":
        raise ValueError(
            f"{part} holds one document, so next-sentence prediction "
            "has no random second segments. Separate documents with a blank line, or use "
            "objective='mlm' or 'sop'.")


def _instances(read, tokenizer, max_seq_length, short_seq_prob, objective, seed, repeat, window_chars):
    """Packed rows from every window of the documents `read(seed=...)` yields; once, or again and
    again with `repeat` (each pass interleaves the files afresh)."""
    for epoch in itertools.count():
        rng = np.random.default_rng([seed, epoch])
        previous, produced = [], 0
        for window in _windows(read(seed=[seed, epoch, 1]), window_chars):
            documents = [document for document in map(_tokenize_fn(tokenizer), window) if document]
            for index in rng.permutation(len(documents)):
                others = documents[:index] + documents[index + 1:] or previous
                for first, second, label in document_instances(
                        documents[index], others, rng, max_seq_length, short_seq_prob, objective):
                    produced += 1
                    yield _pack(tokenizer, first, second, label, max_seq_length)
            previous = documents
        if not produced:
            raise ValueError("The pretraining corpus gives no tokens to train on.")
        if not repeat:
            return


def _windows(documents, window_chars):
    window, chars = [], 0
    for document in documents:
        window.append(document)
        chars += sum(map(len, document))
        if chars >= window_chars and len(window) >= 2:
            yield window
            window, chars = [], 0
    if window:
        yield window


def _tokenize_fn(tokenizer, chunk=512):
    """Sentences -> list of 1-D token-id arrays (no special tokens), empty ones dropped.

    Each array is a copy: a slice would keep the whole padded chunk it came from in memory."""

    def tokenize(sentences):
        pieces = []
        for start in range(0, len(sentences), chunk):
            out = tokenizer(sentences[start:start + chunk], max_length=1 << 30, padding="longest")
            lengths = out["padding_mask"].sum(axis=1)
            pieces += [ids[1:n - 1].copy() for ids, n in zip(out["token_ids"], lengths) if n > 2]
        return pieces

    return tokenize


def _pack(tokenizer, first, second, label, max_seq_length):
    parts = [[tokenizer.cls_token_id], first, [tokenizer.sep_token_id]]
    if second is not None:
        parts += [second, [tokenizer.sep_token_id]]
    ids = np.concatenate(parts).astype(np.int32)
    segment_ids = np.zeros(max_seq_length, np.int32)
    if second is not None:
        segment_ids[len(first) + 2:len(ids)] = 1
    padding_mask = (np.arange(max_seq_length) < len(ids)).astype(np.int32)
    token_ids = np.full(max_seq_length, tokenizer.pad_token_id, np.int32)
    token_ids[:len(ids)] = ids
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask,
            "label": np.int32(label)}


def masking_vocabulary(tokenizer):
    """`mask_batch`'s vocabulary arguments for any of kbert's tokenizers (WordPiece, SentencePiece, byte-level
    BPE): (ids never masked: padding, unknown, the two separators and the mask; a flag per id, whether the token
    goes on the word before it (`continues_word`); ids a random replacement may take: all but those never masked
    and WordPiece's [unused] tokens)."""
    vocabulary = tokenizer.vocabulary()
    special_ids = [tokenizer.pad_token_id, tokenizer.unk_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id,
                   tokenizer.mask_token_id]
    replacement_ids = [i for i, token in enumerate(vocabulary)
                       if i not in special_ids and not token.startswith("[unused")]
    return special_ids, [tokenizer.continues_word(token) for token in vocabulary], replacement_ids

"""Token ids back to text, as Hugging Face's `tokenizer.decode` gives it: the ids' tokens (the special ones left
out with `skip_special_tokens`) joined by the decoder of the tokenizer's kind, as the `tokenizers` library's
WordPiece, ByteLevel and Metaspace decoders join them. Pure Python: no TensorFlow op runs.

transformers 5 cleans up no further spaces unless a tokenizer's config asks for it
(`clean_up_tokenization_spaces`), which the tokenizers kbert reads and writes do not.
"""

from kbert_core.byte_level_bpe import bytes_to_unicode

# The `tokenizers` WordPiece decoder's cleanup, applied to each token (with its space) in this order.
_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
            (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))
_BYTES = {character: byte for byte, character in bytes_to_unicode().items()}
_METASPACE = "\u2581"


def decode(tokenizer, token_ids, skip_special_tokens=False):
    """The text of `token_ids` (ints) under `tokenizer` (any kbert tokenizer), as Hugging Face's decode gives it.

    Example:
    >>> from kbert.text import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi", "##s", "!"])
    >>> decode(tokenizer, [2, 5, 6, 7, 4, 3]), decode(tokenizer, [2, 5, 6, 7, 4, 3], skip_special_tokens=True)
    ('[CLS] his! [MASK] [SEP]', 'his!')
    """
    special = special_ids(tokenizer) if skip_special_tokens else ()
    tokens = [tokenizer.id_to_token(int(i)) for i in token_ids if int(i) not in special]
    return JOINERS[tokenizer.kind](tokens)


def special_ids(tokenizer):
    """The ids `skip_special_tokens` leaves out: padding, unknown, first, separator and mask tokens."""
    return {tokenizer.pad_token_id, tokenizer.unk_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id,
            tokenizer.mask_token_id}


def join_wordpieces(tokens):
    """WordPiece: a "##" piece goes on the token before it, any other token after a space (but the first), each
    cleaned up (" ." to ".", ...).

    Example:
    >>> join_wordpieces(["hello", "##s", ",", "world"])
    'hellos, world'
    """
    text = []
    for i, token in enumerate(tokens):
        if i:
            token = token[2:] if token.startswith("##") else " " + token
        for dirty, clean in _CLEANUP:
            token = token.replace(dirty, clean)
        text.append(token)
    return "".join(text)


def join_byte_level(tokens):
    """Byte-level BPE: each token's characters as the bytes they stand for (a token with a character outside the
    table, as its own UTF-8), the whole read as UTF-8, a byte that cannot be one character as U+FFFD.

    Example:
    >>> join_byte_level(["Hello", "\u0120w", "orld", "\u0120\u00c3", "\u00a9"])
    'Hello world é'
    """
    data = bytearray()
    for token in tokens:
        if all(character in _BYTES for character in token):
            data.extend(_BYTES[character] for character in token)
        else:
            data.extend(token.encode("utf-8"))
    return data.decode("utf-8", "replace")


def join_metaspace(tokens):
    """SentencePiece: "\u2581" is a space, except in the first token, where it is dropped.

    Example:
    >>> join_metaspace(["\u2581hello", ",", "\u2581world"])
    'hello, world'
    """
    return "".join(token.replace(_METASPACE, "" if i == 0 else " ") for i, token in enumerate(tokens))


JOINERS = {"wordpiece": join_wordpieces, "byte_level_bpe": join_byte_level, "sentence_piece": join_metaspace}

"""The one place that picks a model's tokenizer: by the files of its folder and its family (config.json's
`model_type`), and by the config a task's .keras file holds it by.

| files | tokenizer | families | layout |
|---|---|---|---|
| vocab.txt | `BertTokenizer` (WordPiece) | bert, electra, distilbert | `[CLS] A [SEP] B [SEP]`, token types |
| spiece.model (or tokenizer.json) | `SentencePieceTokenizer` (unigram) | albert | `[CLS] A [SEP] B [SEP]`, types |
| vocab.json, merges.txt (or tokenizer.json) | `ByteLevelBPETokenizer` | roberta | `<s> A </s></s> B </s>`, no types |
"""

import pathlib

# Tokenizer kind -> the files of its folder; family -> its tokenizer kind (the others: WordPiece).
KIND_FILES = {"sentence_piece": ("spiece.model",), "byte_level_bpe": ("vocab.json", "merges.txt"),
              "wordpiece": ("vocab.txt",)}
FAMILY_KINDS = {"albert": "sentence_piece", "roberta": "byte_level_bpe"}


def tokenizer_class(kind):
    """The class of tokenizer `kind` ("wordpiece", "sentence_piece" or "byte_level_bpe").

    Example:
    >>> tokenizer_class("byte_level_bpe").__name__
    'ByteLevelBPETokenizer'
    """
    if kind == "wordpiece":
        from kbert.text.tokenizer import BertTokenizer

        return BertTokenizer
    if kind == "sentence_piece":
        from kbert.text.sentence_piece import SentencePieceTokenizer

        return SentencePieceTokenizer
    if kind == "byte_level_bpe":
        from kbert.text.byte_level_bpe import ByteLevelBPETokenizer

        return ByteLevelBPETokenizer
    raise ValueError(f"Unknown tokenizer kind {kind!r}: expected one of {sorted(KIND_FILES)}.")


def tokenizer_kind(folder, model_type=None):
    """The kind of tokenizer of `folder`: its family's (`model_type`: "albert" SentencePiece, "roberta" byte-level
    BPE, others WordPiece), whose files must be there; without a family, the first of `KIND_FILES` whose files are.

    Example:
    >>> tokenizer_kind("no/such/folder", "roberta")
    Traceback (most recent call last):
    FileNotFoundError: no/such/folder has no vocab.json and merges.txt: a roberta model's tokenizer (byte_level_bpe) ...
    """
    folder = pathlib.Path(folder)
    if model_type is not None:
        kind = FAMILY_KINDS.get(model_type, "wordpiece")
        missing = [name for name in KIND_FILES[kind] if not (folder / name).is_file()]
        if missing and kind != "wordpiece" and (folder / "tokenizer.json").is_file():
            return kind  # as `transformers` 5 saves it: the kind's `kbert_core` class reads tokenizer.json
        if missing:
            raise FileNotFoundError(f"{folder} has no {' and '.join(missing)}: a {model_type} model's tokenizer "
                                    f"({kind}) reads {', '.join(KIND_FILES[kind])}.")
        return kind
    for kind, names in KIND_FILES.items():
        if all((folder / name).is_file() for name in names):
            return kind
    raise FileNotFoundError(f"{folder} holds no tokenizer: expected vocab.txt (WordPiece), spiece.model "
                            "(SentencePiece) or vocab.json and merges.txt (byte-level BPE).")


def load_hf_tokenizer(folder, model_type=None):
    """The tokenizer of a Hugging Face (or kbert) folder, picked by `tokenizer_kind`, read with its class's
    `from_hf`.

    Example:
    >>> from kbert.paths import minilm_dir
    >>> type(load_hf_tokenizer(minilm_dir(), "bert")).__name__
    'BertTokenizer'
    """
    return tokenizer_class(tokenizer_kind(folder, model_type)).from_hf(folder)


def tokenizer_from_config(config):
    """The tokenizer of the config a preprocessor saves (the tokenizer's `get_config`): its `kind` names the class
    (none: WordPiece, as kbert wrote it before RoBERTa and ALBERT).

    Example:
    >>> tokenizer = tokenizer_from_config({"vocabulary": ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"],
    ...                                    "lowercase": True})
    >>> type(tokenizer).__name__, tokenizer.vocabulary_size
    ('BertTokenizer', 6)
    """
    config = dict(config)
    return tokenizer_class(config.pop("kind", "wordpiece")).from_config(config)


def tokenizer_files(tokenizer):
    """The file names of `tokenizer`'s folder, as its `save` writes them (for messages and checksums).

    Example:
    >>> from kbert.text import BertTokenizer
    >>> tokenizer_files(BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hi"]))
    ('vocab.txt', 'tokenizer_config.json')
    """
    return (*type(tokenizer).FILES, "tokenizer_config.json")

"""Hugging Face's side of the family task tests (`test_family_tasks.py`), run in a process of its own (torch +
transformers, never beside TensorFlow):

    python family_folders_reference.py CORPUS FOLDER CASES OUT

Trains each family's tokenizer on the first 300 lines of the text file CORPUS (RoBERTa: a byte-level BPE with
`tokenizers`; ALBERT: a SentencePiece unigram model with `sentencepiece` and ALBERT's options; ELECTRA and
DistilBERT: a WordPiece vocab.txt with `tokenizers`), writes its files into FOLDER/<family>/ beside a random
1-layer base model of that family (`save_pretrained`, vocab_size the tokenizer's), loads the folder's tokenizer
back with `AutoTokenizer.from_pretrained` (its length checked) and encodes each call of the JSON file CASES
({"texts", "pairs" or null}): OUT gets {family: [[{"ids", "type_ids"} per text] per call]}, unpadded.
FOLDER/roberta_json and FOLDER/albert_json hold RoBERTa's and ALBERT's models and tokenizers as `transformers` 5
saves them (tokenizer.json, no vocab.json or spiece.model), OUT their rows too.
"""

import itertools
import json
import pathlib
import sys

import transformers

FAMILIES = ("roberta", "albert", "electra", "distilbert")
OWN_FILES = {"roberta": "vocab.json", "albert": "spiece.model"}  # what `save_pretrained` no longer writes
SIZES = {"roberta": 400, "albert": 300, "electra": 300, "distilbert": 300}
ALBERT_OPTIONS = dict(model_type="unigram", pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
                      control_symbols=["[CLS]", "[SEP]", "[MASK]"], user_defined_symbols=["(", ")", '"', "-", "."],
                      character_coverage=0.99995)
SHARED = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37,
              max_position_embeddings=64)
CONFIGS = {
    "roberta": ("RobertaConfig", {**SHARED, "max_position_embeddings": 66, "type_vocab_size": 1, "pad_token_id": 1,
                                  "bos_token_id": 0, "eos_token_id": 2}),
    "albert": ("AlbertConfig", {**SHARED, "embedding_size": 16}),
    "electra": ("ElectraConfig", {**SHARED, "embedding_size": 16}),
    "distilbert": ("DistilBertConfig", dict(dim=32, n_layers=1, n_heads=2, hidden_dim=37, max_position_embeddings=64)),
}


def train_tokenizer(family, lines, folder):
    if family == "roberta":
        from tokenizers import ByteLevelBPETokenizer

        tokenizer = ByteLevelBPETokenizer()
        tokenizer.train_from_iterator(lines, vocab_size=SIZES[family], min_frequency=2, show_progress=False,
                                      special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
        tokenizer.save_model(str(folder))
    elif family == "albert":
        import sentencepiece

        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter([line.lower() for line in lines]), model_prefix=str(folder / "spiece"),
            vocab_size=SIZES[family], minloglevel=2, **ALBERT_OPTIONS)
        (folder / "spiece.vocab").unlink()
    else:
        from tokenizers import BertWordPieceTokenizer

        tokenizer = BertWordPieceTokenizer(lowercase=True)
        tokenizer.train_from_iterator(lines, vocab_size=SIZES[family], min_frequency=2, show_progress=False,
                                      special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
        tokenizer.save_model(str(folder))


def make_model(family, folder):
    import torch

    torch.manual_seed(FAMILIES.index(family))
    config_class, settings = CONFIGS[family]
    config = getattr(transformers, config_class)(vocab_size=SIZES[family], **settings)
    transformers.AutoModel.from_config(config).save_pretrained(folder)


def main(corpus, folder, cases, out):
    lines = [line.strip() for line in itertools.islice(open(corpus, encoding="utf-8"), 300) if line.strip()]
    cases = json.loads(pathlib.Path(cases).read_text("utf-8"))
    outputs = {}
    for family in FAMILIES:
        path = pathlib.Path(folder) / family
        path.mkdir(parents=True)
        train_tokenizer(family, lines, path)
        make_model(family, path)
        tokenizer = transformers.AutoTokenizer.from_pretrained(path)
        if len(tokenizer) != SIZES[family]:
            raise AssertionError(f"{family}: {type(tokenizer).__name__} has {len(tokenizer)} tokens, not "
                                 f"{SIZES[family]}")
        outputs[family] = encode(tokenizer, cases)
        if family in OWN_FILES:  # as `transformers` 5 saves a tokenizer: tokenizer.json alone
            saved = path.parent / f"{family}_json"
            make_model(family, saved)
            tokenizer.save_pretrained(saved)
            if (saved / OWN_FILES[family]).exists():
                raise AssertionError(f"save_pretrained wrote {OWN_FILES[family]}: {saved.name} tests nothing new")
            outputs[saved.name] = encode(transformers.AutoTokenizer.from_pretrained(saved), cases)
    pathlib.Path(out).write_text(json.dumps(outputs), "utf-8")


def encode(tokenizer, cases):
    """Hugging Face's unpadded rows of each call."""
    rows = []
    for call in cases:
        encoding = tokenizer(call["texts"], call["pairs"], return_token_type_ids=True)
        rows.append([{"ids": ids, "type_ids": types} for ids, types in
                     zip(encoding["input_ids"], encoding["token_type_ids"])])
    return rows


if __name__ == "__main__":
    main(*sys.argv[1:])

"""Hugging Face's side of the tokenizer tests of RoBERTa and ALBERT, run in a process of its own (transformers).

    python hf_tokenizers_reference.py FAMILY CORPUS FOLDER CASES OUT

FAMILY `roberta` trains a byte-level BPE of 1000 tokens with `tokenizers`, as RoBERTa's was, into FOLDER/roberta
(vocab.json, merges.txt). FAMILY `albert` trains a SentencePiece unigram model of 800 pieces with `sentencepiece`
and ALBERT's options, and writes five folders: FOLDER/albert (spiece.model: its user-defined symbols are pieces
scored like the others, as in SentencePiece and `transformers` >= 5.25), FOLDER/albert_cased (accents and case
kept: tokenizer_config.json), FOLDER/albert_hub (spiece.model beside a tokenizer.json like those of ALBERT's
checkpoints on the Hugging Face hub, which `transformers` 4 wrote: no user-defined symbols among its added tokens,
other scores), FOLDER/albert_added (the user-defined symbols as non-special added tokens in tokenizer_config.json,
cut out of the raw text first, as `transformers` 5.0 to 5.24 read spiece.model) and FOLDER/albert_json,
albert_added's tokenizer as `transformers` 5 saves it (tokenizer.json, no spiece.model). Training reads the first
1000 reviews of the text file CORPUS.

Each folder's tokenizer is Hugging Face's fast one, loaded with `from_pretrained`, its length checked, its
`tokenizers` backend saved as hf_tokenizer.json. CASES is a JSON object {folder name: [call, ...]}, a call being
{"texts", "pairs" or null, "max_length" or null, "truncation"}; OUT gets {folder name: [[row, ...] per call]},
a row being the unpadded `ids`, `offsets`, `word_ids` (-1 for none) and `type_ids`.
"""

import itertools
import json
import pathlib
import shutil
import sys

import transformers

# ALBERT's own SentencePiece options (its README): these ids and symbols.
ALBERT_OPTIONS = dict(model_type="unigram", vocab_size=800, pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
                      control_symbols=["[CLS]", "[SEP]", "[MASK]"],
                      user_defined_symbols=["(", ")", '"', "-", ".", "–", "£", "€"], character_coverage=0.99995)


def roberta(lines, folder):
    from tokenizers import ByteLevelBPETokenizer

    tokenizer = ByteLevelBPETokenizer()
    tokenizer.train_from_iterator(lines, vocab_size=1000, min_frequency=2, show_progress=False,
                                  special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    (folder / "roberta").mkdir()
    tokenizer.save_model(str(folder / "roberta"))
    return {"roberta": (transformers.RobertaTokenizerFast.from_pretrained(folder / "roberta"), 1000)}


def albert(lines, folder):
    import sentencepiece

    for name in ("albert", "albert_cased", "albert_hub", "albert_added"):
        (folder / name).mkdir()
    sentencepiece.SentencePieceTrainer.train(  # ALBERT's model was trained on lower-cased text
        sentence_iterator=iter([line.lower() for line in lines]), model_prefix=str(folder / "albert" / "spiece"),
        minloglevel=2, **ALBERT_OPTIONS)
    (folder / "albert" / "spiece.vocab").unlink()
    for name in ("albert_cased", "albert_hub", "albert_added"):
        shutil.copy(folder / "albert" / "spiece.model", folder / name)
    (folder / "albert_cased" / "tokenizer_config.json").write_text('{"keep_accents": true, "do_lower_case": false}')
    symbols = ALBERT_OPTIONS["user_defined_symbols"]
    added = {str(5 + i): {"content": symbol, "lstrip": False, "normalized": False, "rstrip": False,
                          "single_word": False, "special": False} for i, symbol in enumerate(symbols)}
    (folder / "albert_added" / "tokenizer_config.json").write_text(json.dumps({"added_tokens_decoder": added}))
    tokenizers = {name: transformers.AlbertTokenizerFast.from_pretrained(folder / name)
                  for name in ("albert", "albert_cased", "albert_added")}
    if not tokenizers["albert_cased"].keep_accents or tokenizers["albert_cased"].do_lower_case:
        raise AssertionError("albert_cased/tokenizer_config.json was not read")
    if tokenizers["albert"].tokenize("a(b") == tokenizers["albert_added"].tokenize("a(b"):
        raise AssertionError("albert_added's added tokens cut nothing out of the raw text")
    tokenizers["albert_added"].save_pretrained(folder / "albert_json")
    if (folder / "albert_json" / "spiece.model").exists():
        raise AssertionError("save_pretrained wrote spiece.model: albert_json tests nothing new")
    tokenizers["albert_json"] = transformers.AlbertTokenizerFast.from_pretrained(folder / "albert_json")
    config = json.loads(tokenizers["albert"].backend_tokenizer.to_str())
    config["added_tokens"] = [token for token in config["added_tokens"] if token["special"]]
    for i, item in enumerate(config["model"]["vocab"]):
        digit_comma = len(item[0]) > 1 and item[0][-1] == "," and item[0][-2].isdigit()
        item[1] -= 100.0 if digit_comma else 5.0 if i % 7 == 0 and i > 12 else 0.0  # transformers 4's rule, and more
    (folder / "albert_hub" / "tokenizer.json").write_text(json.dumps(config), "utf-8")
    tokenizers["albert_hub"] = transformers.AlbertTokenizerFast.from_pretrained(folder / "albert_hub")
    return {name: (tokenizer, 800) for name, tokenizer in tokenizers.items()}


def encode(tokenizer, call):
    """Hugging Face's rows for one call: unpadded lists."""
    options = dict(return_offsets_mapping=True, return_token_type_ids=True)
    if call["max_length"]:
        options.update(max_length=call["max_length"], truncation=call["truncation"])
    encoding = tokenizer(call["texts"], call["pairs"], **options)
    return [{"ids": encoding["input_ids"][i], "offsets": [list(o) for o in encoding["offset_mapping"][i]],
             "word_ids": [-1 if w is None else w for w in encoding.word_ids(i)],
             "type_ids": encoding["token_type_ids"][i]} for i in range(len(call["texts"]))]


def main(family, corpus, folder, cases, out):
    lines = [line.strip() for line in itertools.islice(open(corpus, encoding="utf-8"), 2000) if line.strip()]
    folder = pathlib.Path(folder)
    tokenizers = {"roberta": roberta, "albert": albert}[family](lines, folder)
    cases = json.loads(pathlib.Path(cases).read_text("utf-8"))
    outputs = {}
    for name, (tokenizer, size) in tokenizers.items():
        if len(tokenizer) != size:
            raise AssertionError(f"{name}: {type(tokenizer).__name__} has {len(tokenizer)} tokens, not {size}")
        tokenizer.backend_tokenizer.save(str(folder / name / "hf_tokenizer.json"))
        outputs[name] = [encode(tokenizer, call) for call in cases.get(name, [])]
    pathlib.Path(out).write_text(json.dumps(outputs), "utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])

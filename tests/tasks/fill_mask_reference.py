"""Hugging Face's side of the fill-mask tests (`test_fill_mask.py`), run in a process of its own (torch + transformers,
never beside TensorFlow):

    python fill_mask_reference.py CORPUS FOLDER OUT

For BERT and each of its family, trains the tokenizer on the first 300 lines of the text file CORPUS as
`family_folders_reference.py` does (BERT's a WordPiece, as ELECTRA's) and writes it into FOLDER/<family>/ beside a
random 1-layer `<Family>ForMaskedLM` (its weights moved by 0.2 x a normal draw, so that the likeliest tokens stand
apart). Texts are the corpus's lines 300 on, cut to 8 words, with a word (or two, or the first, or the last)
replaced by the family's mask token. OUT gets {family: {"texts", "top_k": Hugging Face's fill-mask pipeline on
them (top_k=5), "targets" (three tokens of the vocabulary and a word outside it), "targeted": the pipeline on the
first three texts with those targets}}.
"""

import itertools
import json
import pathlib
import sys
import warnings

import transformers
from family_folders_reference import CONFIGS, SIZES, train_tokenizer  # beside this script

FAMILIES = ("bert", "roberta", "albert", "electra", "distilbert")
PREFIXES = {"bert": "Bert", "roberta": "Roberta", "albert": "Albert", "electra": "Electra", "distilbert": "DistilBert"}
CONFIGS = {**CONFIGS, "bert": ("BertConfig", CONFIGS["electra"][1] | {"embedding_size": None})}
SIZES = {**SIZES, "bert": 300}


def texts(lines, mask):
    """Masked texts: a middle word, two words, the first word, the last (its punctuation kept) and a lone mask."""
    words = [line.split()[:8] for line in lines if len(line.split()) >= 8]
    found = []
    for i, row in enumerate(words[:12]):
        row = list(row)
        kind = i % 4
        if kind == 0:
            row[3] = mask
        elif kind == 1:
            row[2] = row[6] = mask
        elif kind == 2:
            row[0] = mask
        else:
            row[-1] = mask + "."
        found.append(" ".join(row))
    return found + [mask]


def make_model(family, folder):
    import torch

    torch.manual_seed(FAMILIES.index(family))
    config_class, settings = CONFIGS[family]
    settings = {key: value for key, value in settings.items() if value is not None}
    config = getattr(transformers, config_class)(vocab_size=SIZES[family], **settings)
    model = getattr(transformers, PREFIXES[family] + "ForMaskedLM")(config).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.add_(0.2 * torch.randn_like(parameter))
    model.save_pretrained(folder)


def main(corpus, folder, out):
    lines = [line.strip() for line in itertools.islice(open(corpus, encoding="utf-8"), 1000) if line.strip()]
    outputs = {}
    for family in FAMILIES:
        path = pathlib.Path(folder) / family
        path.mkdir(parents=True)
        train_tokenizer("electra" if family == "bert" else family, lines[:300], path)
        make_model(family, path)
        tokenizer = transformers.AutoTokenizer.from_pretrained(path)
        if len(tokenizer) != SIZES[family]:
            raise AssertionError(f"{family}: {len(tokenizer)} tokens, not {SIZES[family]}")
        fill = transformers.pipeline("fill-mask", model=str(path), tokenizer=tokenizer, device="cpu")
        masked = texts(lines[300:], tokenizer.mask_token)
        vocabulary = tokenizer.convert_ids_to_tokens([20, 40, 60])
        targets = [*vocabulary, "zzqx"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the target outside the vocabulary
            targeted = [fill(text, targets=targets) for text in masked[:3]]
        outputs[family] = {"texts": masked, "top_k": [fill(text, top_k=5) for text in masked], "targets": targets,
                           "targeted": targeted}
    pathlib.Path(out).write_text(json.dumps(outputs), "utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])

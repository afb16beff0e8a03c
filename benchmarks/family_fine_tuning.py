"""Fine-tuning works the same for every family (issue 51's aim): a RoBERTa-, an ALBERT- and an ELECTRA-shaped model,
each pretrained briefly with its own tokenizer and objective, then fine-tuned on SST-2 from those weights and from a
random initialisation of the same shape; BERT itself, pretrained and fine-tuned the same way, is the control (what
the budget gives the family whose pretraining kbert checks against Hugging Face's).

    python benchmarks/family_fine_tuning.py                      # 4 families x 5 min, ~35 min on 2 cores
    python benchmarks/family_fine_tuning.py --layers 4 --hidden 128 --seq-len 64 --lr 1e-3 --warmup-steps 200 \\
        --steps 2000 --train-sentences 8000 --finetune-lr 1e-4 --seeds 3   # a table in docs/results.md
    python benchmarks/family_fine_tuning.py --minutes 0.2 --train-sentences 64 --validation-size 100 \\
        --corpus-lines 2000 --tokenizer-lines 2000 --vocab-size 1000 --layers 1 --hidden 64 --seq-len 64 \\
        --finetune-epochs 1 --out saved_models/family_fine_tuning_smoke         # smoke

Each family (--families) pretrains on the first --corpus-lines lines of the corpus (default
$KBERT_DATA_DIR/imdb/unsup.txt, the text as it is), its tokenizer learned from --tokenizer-lines of them:
  bert      a WordPiece vocabulary apps/pretrain.py learns, masked LM alone (the control: RoBERTa's objective)
  roberta   a byte-level BPE of --vocab-size tokens (`tokenizers`), masked LM alone (RoBERTa's recipe), no token types
  albert    a SentencePiece unigram model (`sentencepiece`, ALBERT's options: lower case, [CLS] [SEP] [MASK]),
            masked LM + sentence-order prediction, embeddings of 128 (--hidden / 2 at most) and one shared layer group
  electra   a WordPiece vocabulary apps/pretrain.py learns, replaced-token detection with its generator (1/4 wide),
            embeddings of 128 (--hidden / 2 at most), no pooler
FAMILY:OBJECTIVE pretrains the family with another objective (one of pretraining_objectives.py's: mlm, nsp, sop,
span, span_sbo, electra), e.g. electra:mlm, ELECTRA's shape with masked LM alone; its random init is the family's.
a model of --layers layers of --hidden units (heads of 64), saved at random init (apps/pretrain.py --steps 0: the
baseline, the same weights the pretraining starts from) and pretrained for --minutes of training steps
(apps/pretrain.py --minutes, --tokenizer: the same tokenizer). Both are fine-tuned (apps/sentiment.py train --init) on
--train-sentences SST-2 sentences and scored on --validation-size sentences of train.tsv held out once
(benchmarks/pretraining_objectives.py's split: SST-2's dev set is kept apart from ../shared/data). The table: family,
objective, pretraining steps, validation accuracy pretrained and random.

Resumable as pretraining_objectives.py: runs with a metrics.json are read back (a pretraining of --steps killed midway
resumes from its last backup, every --checkpoint-every steps); a rerun with other settings into the same --out is
refused. Steps depend on the machine: run it on a quiet one. Writes OUT/results.json and OUT/results.md.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from kbert_core.cpu import cpu_summary, describe_cpu  # noqa: E402  (numpy/stdlib only: no Keras in this process)
from pretraining_objectives import (  # noqa: E402
    OBJECTIVES, STEP_CAP, Cores, fine_tune, set_up, spread, write_results)

FAMILIES = {  # family: (objective, BertConfig fields beside the size's, how its tokenizer is made)
    "bert": ("mlm", dict(family="bert"), "learned"),
    "roberta": ("mlm", dict(family="roberta", num_segments=1, position_offset=2, layer_norm_epsilon=1e-5), "bpe"),
    "albert": ("sop", dict(family="albert", num_layer_groups=1, activation="gelu_approximate", dropout=0.0),
               "sentencepiece"),
    "electra": ("electra", dict(family="electra", pooler=False), "learned"),
}
ALBERT_OPTIONS = dict(model_type="unigram", pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
                      control_symbols=["[CLS]", "[SEP]", "[MASK]"], character_coverage=0.99995)


def parser():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), metavar="FAMILY[:OBJECTIVE]",
                        help=f"of {', '.join(FAMILIES)}, each with its own objective or the one named (default: all)")
    parser.add_argument("--minutes", type=float, default=5.0,
                        help="wall-clock minutes of pretraining steps for each family (default: %(default)s)")
    parser.add_argument("--steps", type=int,
                        help="a fixed number of pretraining steps for each family instead of --minutes: the same "
                             "weights on a loaded machine as on a quiet one")
    parser.add_argument("--train-sentences", type=int, default=2000,
                        help="SST-2 sentences each fine-tuning trains on (default: %(default)s)")
    parser.add_argument("--validation-size", type=int, default=2000,
                        help="SST-2 sentences held out for scoring (default: %(default)s)")
    parser.add_argument("--corpus", help="pretraining text (default: $KBERT_DATA_DIR/imdb/unsup.txt)")
    parser.add_argument("--corpus-lines", type=int, default=50000,
                        help="the first N lines of --corpus: pretraining text and tokenizer training (default: "
                             "%(default)s)")
    parser.add_argument("--data", help="SST-2 train.tsv (default: $KBERT_DATA_DIR/sst2/train.tsv)")
    parser.add_argument("--vocab-size", type=int, default=8000, help="every tokenizer's size (default: %(default)s)")
    parser.add_argument("--tokenizer-lines", type=int, default=10000,
                        help="corpus lines each tokenizer learns from (BERT's and ELECTRA's: apps/pretrain.py "
                             "--vocab-lines, drawn at random) (default: %(default)s)")
    parser.add_argument("--layers", type=int, default=4, help="(default: %(default)s)")
    parser.add_argument("--hidden", type=int, default=256, help="hidden units, heads of 64 (default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=32, help="pretraining batch (default: %(default)s)")
    parser.add_argument("--seq-len", type=int, default=128, help="pretraining tokens a row (default: %(default)s)")
    parser.add_argument("--lr", type=float, default=5e-4, help="pretraining peak learning rate (default: %(default)s)")
    parser.add_argument("--warmup-steps", type=int, default=100, help="pretraining warmup (default: %(default)s)")
    parser.add_argument("--mixed-precision", action="store_true",
                        help="pretrain in bfloat16 (apps/pretrain.py --mixed-precision; fast where the CPU has "
                             "bfloat16 units)")
    parser.add_argument("--checkpoint-every", type=int, default=1000,
                        help="pretraining steps between backups (default: %(default)s)")
    parser.add_argument("--finetune-lr", type=float, default=3e-4, help="(default: %(default)s)")
    parser.add_argument("--finetune-epochs", type=int, default=3, help="(default: %(default)s)")
    parser.add_argument("--max-length", type=int, default=64,
                        help="fine-tuning tokens a sentence (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="the pretraining seed (default: %(default)s)")
    parser.add_argument("--seeds", type=int, default=1,
                        help="fine-tunings of each backbone, seeds 0..N-1: the table gives mean ± std "
                             "(default: %(default)s)")
    parser.add_argument("--out", default="saved_models/family_fine_tuning", help="(default: %(default)s)")
    return parser


def main(argv=None):
    parser_ = parser()
    args = parser_.parse_args(argv)
    if args.seeds < 1 or (args.steps is not None and args.steps < 1):
        parser_.error("--seeds and --steps must be at least 1")
    runs = [family_run(name) for name in args.families]
    if None in runs:
        parser_.error(f"--families {' '.join(args.families)}: give FAMILY or FAMILY:OBJECTIVE, a family of "
                      f"{', '.join(FAMILIES)} and an objective of {', '.join(OBJECTIVES)}")
    out, corpus, train, valid = set_up(args)
    machine, backend = describe_cpu(), os.environ.get("KERAS_BACKEND", "tensorflow")
    print(f"machine: {cpu_summary(machine)}; backend {backend}; {args.layers} layers x {args.hidden}, "
          f"{budget(args)} a family", flush=True)
    rows, cores = [], Cores(1)  # one fine-tuning at a time, on the cores this process has
    for family, objective, name in runs:
        tokenizer = train_tokenizer(family, corpus, out / "tokenizers" / family, args.vocab_size,
                                    args.tokenizer_lines)
        random = pretrain(args, out, corpus, family, tokenizer, f"{family}_random")
        pretrained = pretrain(args, out, corpus, family, random["folder"], f"{name}_pretrained", objective)
        row = {"family": family, "objective": objective, "steps": pretrained["steps"],
               "held_out": pretrained["held_out"]}
        for kind, run in (("pretrained", pretrained), ("random", random)):
            row[kind] = [fine_tune(args, out, {"objective": run["folder"].name, "folder": run["folder"]},
                                   args.train_sentences, args.finetune_epochs, seed, train, valid, cores)
                         for seed in range(args.seeds)]
        print(f"{family} ({objective}): {row['steps']:,} steps; SST-2 {spread(row['pretrained'])} pretrained, "
              f"{spread(row['random'])} random", flush=True)
        rows.append(row)
    write_results(out, format_table(rows, args, machine, backend),
                  {"settings": vars(args), "machine": machine, "backend": backend, "validation": str(valid),
                   "runs": rows})


def family_run(name):
    """`(family, objective, run name)` of a --families entry, FAMILY or FAMILY:OBJECTIVE (None if either is unknown).

    >>> family_run("albert"), family_run("electra:mlm"), family_run("electra:gan")
    (('albert', 'sop', 'albert'), ('electra', 'mlm', 'electra_mlm'), None)
    """
    family, _, objective = name.partition(":")
    if family not in FAMILIES or (objective and objective not in OBJECTIVES):
        return None
    own = FAMILIES[family][0]
    return family, objective or own, family if objective in ("", own) else f"{family}_{objective}"


def budget(args):
    """What each family's pretraining gets, in words: `--steps` steps or `--minutes` minutes."""
    return f"{args.steps:,} steps" if args.steps else f"{args.minutes} min"


def train_tokenizer(family, corpus, folder, size, lines):
    """The folder of `family`'s tokenizer of `size` tokens trained on the first `lines` lines of `corpus` (made once;
    None for BERT and ELECTRA: apps/pretrain.py learns their WordPiece vocabulary)."""
    how = FAMILIES[family][2]
    if how == "learned" or folder.is_dir():
        return None if how == "learned" else folder
    with corpus.open(encoding="utf-8") as text:
        lines = [line.strip() for _, line in zip(range(lines), text) if line.strip()]
    making = folder.with_name(folder.name + ".part")
    making.mkdir(parents=True, exist_ok=True)
    if how == "bpe":
        from tokenizers import ByteLevelBPETokenizer

        tokenizer = ByteLevelBPETokenizer()
        tokenizer.train_from_iterator(lines, vocab_size=size, min_frequency=2, show_progress=False,
                                      special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
        tokenizer.save_model(str(making))
    else:
        import sentencepiece

        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter([line.lower() for line in lines]), model_prefix=str(making / "spiece"),
            vocab_size=size, minloglevel=2, input_sentence_size=len(lines), **ALBERT_OPTIONS)
        (making / "spiece.vocab").unlink()
    making.rename(folder)
    print(f"trained {family}'s tokenizer ({how}, {size} tokens) on {len(lines):,} lines", flush=True)
    return folder


def config(args, family):
    """The BertConfig fields of `family`'s model (a JSON file apps/pretrain.py reads)."""
    fields = dict(FAMILIES[family][1], num_layers=args.layers, hidden_dim=args.hidden,
                  num_heads=max(args.hidden // 64, 1), intermediate_dim=4 * args.hidden,
                  max_sequence_length=max(args.seq_len, args.max_length))
    if family in ("albert", "electra"):
        fields["embedding_dim"] = min(128, args.hidden // 2)
    return fields


def pretrain(args, out, corpus, family, tokenizer, name, objective=None):
    """One apps/pretrain.py run of `family`, folder `name` (read back when whole): without `objective` it saves the
    random init (and learns BERT's and ELECTRA's vocabulary); with one it pretrains for `--steps` or under the time
    budget, with the random run's tokenizer."""
    folder, steps = out / "pretrain" / name, 0 if objective is None else None
    metrics_file = folder / "metrics.json"
    done = json.loads(metrics_file.read_text()) if metrics_file.is_file() else None
    whole = done is not None and (folder / "backbone.keras").is_file() and (
        steps == 0 or "time_budget" in done or done.get("steps") == args.steps)
    if not whole:
        config_file = out / f"{family}_config.json"
        config_file.write_text(json.dumps(config(args, family)))
        command = [sys.executable, str(ROOT / "apps" / "pretrain.py"), "--corpus", str(corpus), "--run", folder.name,
                   "--output", str(folder.parent), "--config", str(config_file), "--seed", str(args.seed),
                   "--batch-size", str(args.batch_size), "--seq-len", str(args.seq_len), "--lr", str(args.lr),
                   "--vocab-size", str(args.vocab_size), "--vocab-lines", str(args.tokenizer_lines), "--quiet"]
        if tokenizer:
            command += ["--tokenizer", str(tokenizer)]
        if steps == 0:
            command += ["--steps", "0", "--objective", "mlm", "--holdout-fraction", "0"]
        else:
            total = args.steps or STEP_CAP - STEP_CAP % args.checkpoint_every
            command += [*OBJECTIVES[objective], "--steps", str(total), "--checkpoint-every",
                        str(min(args.checkpoint_every, total)),
                        "--warmup-ratio", str(min(args.warmup_steps / total, 1.0))]
            if not args.steps:  # a killed run under a time budget starts over; one of --steps resumes
                command += ["--minutes", str(args.minutes)]
        if steps == 0 or not args.steps:
            command += ["--restart"]
        if args.mixed_precision:
            command += ["--mixed-precision"]
        print(f"pretraining {folder.name}: {' '.join(command[2:])}", flush=True)
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    metrics = json.loads(metrics_file.read_text())
    return {"steps": metrics.get("steps", 0), "held_out": metrics.get("end"), "folder": folder}


def format_table(rows, args, machine, backend):
    lines = [f"Fine-tuning every family: {args.layers} layers x {args.hidden}, pretrained {budget(args)} each "
             f"(batch {args.batch_size} x {args.seq_len} tokens, peak lr {args.lr}, {args.vocab_size}-token "
             f"tokenizers, seed {args.seed}); SST-2 accuracy (%) on {args.validation_size} held-out sentences after "
             f"{args.finetune_epochs} epoch(s) on {args.train_sentences} sentences at lr {args.finetune_lr}, mean ± "
             f"std over {args.seeds} fine-tuning seed(s).",
             f"Machine: {cpu_summary(machine)}; backend {backend}.", "",
             "| family | objective | pretraining steps | pretrained | random | difference |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        difference = statistics.mean(row["pretrained"]) - statistics.mean(row["random"])
        lines.append(f"| {row['family']} | {row['objective']} | {row['steps']:,} | {spread(row['pretrained'])} | "
                     f"{spread(row['random'])} | {100 * difference:+.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()

"""Distil a fine-tuned sentence classifier (a run of apps/sentiment.py, nli.py, similarity.py or multi_label.py)
into a smaller student, for a phone: the student learns the teacher's outputs, softened by --temperature, on the
training texts (and on --unlabeled in-domain texts, which the teacher labels), and the training labels, weighted
--alpha and 1 - alpha (Hinton et al. 2015; DistilBERT's recipe).

    python apps/distill.py --teacher saved_models/sst2 --data ../shared/data/sst2/train.tsv --out saved_models/sst2_6
    python apps/distill.py --teacher saved_models/sst2 --data ../shared/data/sst2/train.tsv --student bert_mini \\
        --unlabeled ../shared/data/imdb/unsup.txt --unlabeled-lines 20000 --epochs 3 --out saved_models/sst2_mini

The student (--student) is one of:
  every-K        the teacher's own layers, every K-th counted down from its top one (every-2 of a 6-layer teacher:
                 layers 2, 4 and 6), with its embeddings, pooler and head; it reads with the teacher's tokenizer
  a preset       bert_tiny, bert_mini, bert_small, ... (random weights, the teacher's vocabulary)
  CONFIG.json    a JSON object of kbert.BertConfig fields (random weights): num_layers, hidden_dim, num_heads,
                 intermediate_dim, ...; vocabulary_size, if given, must be the teacher's tokenizer's
  a folder       a pretrained encoder (apps/pretrain.py's, a Hugging Face folder, all_minilm_l6_v2), read with its
                 own tokenizer when it has one, else with the teacher's (whose size must then be its vocabulary's)

The student's run folder is an ordinary one of the teacher's task: evaluate and predict with the teacher's app
(apps/sentiment.py evaluate --model OUT ...), export it (apps/export.py --model OUT --quantize dynamic-int8) and run
it with apps/edge_predict.py. Killed, the same command resumes from the last backup; a changed teacher, training or
unlabeled file, or setting, is refused (--restart starts over). The teacher's outputs are kept with the backup and
read back on a resume, not computed again; at --alpha 0 the teacher does not run (--unlabeled is left out). To validate
on the sentences the teacher held out, give the teacher's --seed and --validation-fraction (or its --valid file).
"""

import argparse
import contextlib
import os

from app_cli import HelpFormatter, emit, for_people, parse_args
from cli_errors import add_debug_option, run
from sentence_cli import COMMAND_LINES
from task_cli import (SETTING_OPTIONS, add_layout_options, add_train_options, apply_distribution, layout,
                      positive_float, positive_int, ratio, train_options)


def parser():
    """The argparse parser of this app."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    add_debug_option(parser)
    parser.add_argument("--teacher", required=True,
                        help="run folder of the fine-tuned classifier to learn from (apps/sentiment.py, nli.py, "
                             "similarity.py or multi_label.py train --out)")
    parser.add_argument("--student", default="every-2",
                        help="every-K, a preset, a CONFIG.json or a folder: see above")
    add_train_options(parser, "file, laid out as the teacher's app reads it (TSV, CSV, JSON Lines, JSON or Parquet)",
                      init=False)
    parser.add_argument("--temperature", type=positive_float,
                        help="softens the teacher's and the student's logits in the teacher's term (default: 2; 1 "
                             "for a similarity teacher, whose scores take none)")
    parser.add_argument("--alpha", type=ratio, default=0.5,
                        help="the weight of the teacher's outputs; the labels' is 1 - alpha (1: the teacher alone)")
    parser.add_argument("--unlabeled", metavar="FILE",
                        help="UTF-8 text file of in-domain texts without labels, one a line (text<TAB>pair for nli "
                             "and similarity), which the teacher labels, e.g. ../shared/data/imdb/unsup.txt for "
                             "sentiment")
    parser.add_argument("--unlabeled-lines", type=positive_int, metavar="N",
                        help="read the first N texts of --unlabeled only (default: all)")
    parser.add_argument("--task", choices=tuple(COMMAND_LINES),
                        help="the teacher's task (default: the one its metrics.json records; another is refused)")
    parser.add_argument("--skip-bad-rows", action="store_true", help="skip unreadable rows instead of failing")
    add_layout_options(parser, ("text", "pair", "label"))
    return parser


def main(argv=None):
    args = parse_args(parser(), argv)
    if args.unlabeled_lines and not args.unlabeled:
        raise ValueError("--unlabeled-lines counts the texts of --unlabeled: give --unlabeled FILE too.")
    apply_distribution(args, config=args.student)
    from kbert.distribution import is_chief
    from kbert.recipes import distillation
    from kbert.saving import claim_run_folder
    from run_checks import refusing_in_flags

    def train():
        problem = None if args.task is None else distillation.PROBLEMS[args.task]
        return distillation.train(args.teacher, args.data, args.student, args.out, temperature=args.temperature,
                                  alpha=args.alpha, unlabeled=args.unlabeled, unlabeled_lines=args.unlabeled_lines,
                                  problem=problem, skip_bad_rows=args.skip_bad_rows, layout=layout(args),
                                  **train_options(args))

    flags = {**SETTING_OPTIONS, "init": "student"}  # the settings a run records, named as this app's flags
    if not is_chief():  # another process of a distributed job: trains with process 0, writes and prints nothing
        with open(os.devnull, "w") as nowhere, contextlib.redirect_stdout(nowhere), refusing_in_flags(args, flags):
            train()
        return
    with claim_run_folder(args.out, "--out"), for_people(args), refusing_in_flags(args, flags):
        metrics = train()
    emit(args, [metrics], lambda metrics: f"Wrote {args.out}")


if __name__ == "__main__":
    run(main)

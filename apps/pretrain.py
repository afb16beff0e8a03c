"""Pretrain BERT from scratch (masked LM + next-sentence prediction) with model.fit, any backend.

    python apps/pretrain.py --corpus ../shared/data/gutenberg/train.txt --preset bert_mini \\
        --steps 6000 --run gutenberg_mini
    KERAS_BACKEND=jax python apps/pretrain.py ...     # same on JAX (or torch)

Kill it at any moment (Ctrl-C, kill -9) and rerun the same command: it resumes from the last
checkpoint (every --checkpoint-every steps) at the same step of the learning-rate schedule,
on the batches the run would have read had it not stopped (the data stream is read again past
those already trained: about 100 batches a second; with dropout off the weights come out as an
uninterrupted run's). A rerun must repeat the run's settings (settings.json):
one that differs (another --corpus, --checkpoint-every, --seq-len, ...) is refused, naming the
setting, unless --restart starts the run over. Only --steps may change: raised, it trains the
run further (the learning rate then decays to the new end; it cannot go below the steps
already trained). One process at a time writes a run folder (a lock, .<run>.lock beside it).
Everything lives in saved_models/<run>/: settings.json (with each corpus file's path, size and
SHA-256: the corpus is read where it is, never copied, so a resumed run reads the same files and
a file edited since is refused), vocab.txt (given, or learned from a random sample of
--vocab-lines training lines; another family's tokenizer files with --tokenizer), logs/ (TensorBoard), history.csv,
curves.png, metrics.json (the fields every training run writes, the settings, held-out MLM and NSP accuracy before
and after training), README.md (the model card: versions, corpus checksums, settings, metrics) and, at the end,
backbone.keras: `--init saved_models/<run>` for the task apps, and masked_lm/ (BERT's masked LM with its heads, a
Hugging Face folder: `apps/fill_mask.py --model saved_models/<run>/masked_lm`, or transformers; not for span-boundary,
ELECTRA, or another family's NSP/SOP runs, which Hugging Face has no class for). The checkpoint lives beside the run
folder, as every app's backup: saved_models/.<run>.backup/ (kept at the end, to train further).
--minutes M gives the training steps a wall-clock budget instead (they stop at the step that ends on it, --steps at
most): equal compute, for comparing objectives; such a run neither resumes nor trains further.

--mask-unit chooses what masked LM masks: single WordPieces (token, BERT's default), whole words
(whole_word), or SpanBERT's spans (span: runs of whole words of a length drawn from a geometric
distribution, --span-p 0.2 cut at --max-span 10 words, until 15% of the tokens are chosen; the span,
not each token, becomes [MASK], random tokens or stays, 80/10/10); --span-boundary-objective adds
SpanBERT's second loss (each masked token predicted from the two tokens around its span).

--objective electra trains ELECTRA's replaced-token detection (Clark et al. 2020) instead of masked LM: a generator
--generator-fraction of the model's width (default 0.25, ELECTRA-Small's) fills the masked positions with its samples,
and the model learns from every token whether it was replaced (loss = generator's masked LM + 50 x replaced-token
loss); the model saved as backbone.keras is that discriminator, the generator is dropped.

--init continues pretraining from a checkpoint instead of random weights (e.g. --init all_minilm_l6_v2:
its config and vocabulary; the MLM head starts fresh, its decoder tied to the embeddings). It may be of any family
(a Hugging Face RoBERTa, ALBERT, ELECTRA or DistilBERT folder): its tokenizer comes with it.

Another family from scratch: a --preset (roberta_base, albert_base, electra_small, distilbert_base) or a --config with
`family` (and its shape: embedding_dim, num_layer_groups, position_offset, num_segments, pooler, activation), with
the family's tokenizer: --tokenizer FOLDER, a Hugging Face tokenizer folder of any kind (vocab.txt: WordPiece;
spiece.model: SentencePiece, ALBERT's; vocab.json and merges.txt: byte-level BPE, RoBERTa's), e.g. one that
`tokenizers` or `sentencepiece` trained; WordPiece families (BERT, ELECTRA, DistilBERT) may learn theirs. The run
folder keeps that tokenizer's files beside backbone.keras. What cannot work is refused before any step: NSP or SOP
on a model without token types (RoBERTa's recipe is --objective mlm), a tokenizer of another kind than the family's,
a --config vocabulary_size other than the tokenizer's:
    python apps/pretrain.py --corpus ../shared/data/imdb/unsup.txt --config roberta_small.json \
        --tokenizer my_bpe/ --objective mlm --run roberta_small

The corpus streams (memory does not grow with its size): several files (or a quoted glob) interleave
document by document, drawn in proportion to their sizes (seeded by --seed). --holdout-fraction
holds out a share of the text for evaluation: whole documents, or 20-line passages of longer ones
(a review a line and a book of paragraphs alike), chosen by a hash of their text, so the split
depends neither on --seed nor on the order of the files. A split that leaves either side empty is
refused before anything is written. The text is read as it is: markup such as `<br />` is text
(clean it out first); a byte that is not UTF-8 is refused, naming the file and line; a sentence
over 4,000 characters is cut at a space; a file with no text is skipped, with a note.
The data pipeline (tf.data) runs in a child process that makes batches ahead of the training steps.
--batch-size is the global batch of a step: under --distribution data it is split over the devices (on torch, the
processes torchrun starts; on JAX, the processes KERAS_DISTRIBUTION_JOB_ADDRESSES, _NUM_PROCESSES and _PROCESS_ID
describe: each draws the same stream of global batches and trains on its share of each; process 0 alone writes the
run folder and prints; docs/distributed.md):
    KERAS_BACKEND=torch torchrun --nproc-per-node 2 apps/pretrain.py --corpus ... --run-name NAME --distribution data

With --json, the last line on stdout is metrics.json as one JSON object (the rest goes to stderr).
"""

import argparse
import contextlib
import glob
import json
import os
import pathlib
import sys

from app_cli import app_parser, emit, for_people
from app_cli import parse_args as parse_app_args
from cli_errors import run
from task_cli import (add_distribution_options, add_mixed_precision_option, apply_distribution, non_negative_int,
                      positive_float, positive_int, probability, ratio, sequence_length)

# How it runs, not what it trains: a run may resume on another mesh.
NOT_SETTINGS = ("run", "output", "restart", "json", "verbose", "quiet", "distribution", "mesh", "remat")


class FormerName(argparse.Action):
    """An option's former name (hidden from --help): sets the option and names it on stderr."""

    def __call__(self, parser, namespace, values, option_string=None):
        new = "--" + self.dest.replace("_", "-")
        print(f"{option_string} is now {new}: {option_string} goes in the next release.", file=sys.stderr)
        setattr(namespace, self.dest, values)


def parse_args(argv=None):
    """The arguments, checked; Keras (and kbert) load quietly once they are read (`app_cli.parse_args`)."""
    parser = app_parser(__doc__)
    parser.add_argument("--corpus", nargs="+", required=True,
                        help="text files or quoted glob patterns ('data/*.txt'): a sentence or paragraph a line, "
                             "blank line between documents; several interleave document by document")
    parser.add_argument("--run", "--run-name", dest="run", required=True,
                        help="run name: the folder saved_models/<run> (--run-name: the same, for torchrun, whose "
                             "own options take --run for an abbreviation of its --run-path)")
    parser.add_argument("--output", default="saved_models", help="parent folder of the run folder")
    parser.add_argument("--restart", action="store_true",
                        help="start the run over: delete what its folder holds (checkpoint included) first")
    parser.add_argument("--preset", default="bert_mini",
                        help="a size of kbert.config.PRESETS, bert_tiny to bert_large, or a family's (roberta_base, "
                             "albert_base, electra_small, distilbert_base: give its --tokenizer)")
    parser.add_argument("--config", help="a JSON file of BertConfig fields (instead of --preset)")
    parser.add_argument("--vocab", help="a vocab.txt (or a folder with one); default: learn one from the corpus")
    parser.add_argument("--tokenizer",
                        help="a Hugging Face tokenizer folder of any kind, for a model of any family: vocab.txt "
                             "(WordPiece), spiece.model (SentencePiece, ALBERT's) or vocab.json and merges.txt "
                             "(byte-level BPE, RoBERTa's); needed for a roberta or albert --preset or --config "
                             "(kbert learns WordPiece vocabularies only); its files are kept in the run folder")
    parser.add_argument("--init", help="continue pretraining from these weights instead of random ones: "
                                       "'all_minilm_l6_v2', a Hugging Face folder of any family, a folder "
                                       "apps/pretrain.py wrote, a task run folder; its config and tokenizer replace "
                                       "--preset, --config, --vocab and --tokenizer; the MLM head starts fresh "
                                       "(decoder tied to the embeddings)")
    parser.add_argument("--vocab-size", type=positive_int, default=8192, help="size of the learned vocabulary")
    parser.add_argument("--vocab-lines", type=positive_int, default=20000,
                        help="training lines (drawn at random) the vocabulary is learned from")
    parser.add_argument("--objective", default="nsp",
                        help="beside masked LM: nsp (next sentence), sop (ALBERT's sentence order) or mlm (none); or "
                             "electra (replaced-token detection, with a generator of its own)")
    parser.add_argument("--generator-fraction", type=float,
                        help="with --objective electra: the generator's width as a fraction of the model's, in (0, 1] "
                             "(default 0.25, ELECTRA-Small's; the paper finds 1/4 to 1/2 best)")
    parser.add_argument("--task", dest="objective", action=FormerName, help=argparse.SUPPRESS)
    parser.add_argument("--mask-unit", default="token",
                        help="what masked LM masks: token (single WordPieces, BERT), whole_word (every piece of a "
                             "chosen word) or span (SpanBERT: spans of whole words, --span-p and --max-span their "
                             "lengths, until 15%% of the tokens are chosen; [MASK], random or kept decided per span)")
    parser.add_argument("--whole-word-masking", dest="mask_unit", action="store_const", const="whole_word",
                        help="the same as --mask-unit whole_word")
    parser.add_argument("--span-p", type=probability, default=0.2,
                        help="with --mask-unit span: span lengths in words follow a geometric distribution of this "
                             "parameter, in (0, 1], cut at --max-span (0.2 and 10: a mean of 3.8 words)")
    parser.add_argument("--max-span", type=positive_int, default=10,
                        help="with --mask-unit span: the longest span, in words")
    parser.add_argument("--span-boundary-objective", action="store_true",
                        help="with --mask-unit span: also SpanBERT's span-boundary objective (each masked token "
                             "predicted from the tokens around its span and its place in it; loss added to MLM's)")
    parser.add_argument("--duplication-factor", type=non_negative_int, default=0, help="static masking with this many copies (default: dynamic)")
    parser.add_argument("--steps", type=non_negative_int, default=10000,
                        help="optimizer steps of the whole run, a multiple of --checkpoint-every (0: save the "
                             "random init); may be raised on a rerun to train further")
    parser.add_argument("--checkpoint-every", type=positive_int, default=200, help="steps between checkpoints (one Keras epoch)")
    parser.add_argument("--minutes", type=positive_float,
                        help="a wall-clock budget for the training steps: stop at the step whose end lands this many "
                             "minutes after the first, at most --steps (the learning rate decays to 0 there; warmup: "
                             "--warmup-ratio of --steps); the run is then whole (no backup is kept: it neither "
                             "resumes nor trains further; a rerun, of a whole or a killed one, needs --restart); "
                             "equal compute for comparing objectives (benchmarks/pretraining_objectives.py)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress (by default a bar on a terminal, else a line every 30 s with the time left)")
    parser.add_argument("--batch-size", type=positive_int, default=32)
    parser.add_argument("--seq-len", type=sequence_length, default=128)
    parser.add_argument("--lr", type=positive_float, default=1e-4, help="peak learning rate")
    parser.add_argument("--warmup-ratio", type=ratio, default=0.01, help="share of the steps warming up, in [0, 1]")
    parser.add_argument("--holdout-fraction", type=ratio, default=0.02,
                        help="share of the text held out for evaluation: documents, or 20-line passages of longer "
                             "ones, chosen by a hash of their text (0: none)")
    add_mixed_precision_option(parser)
    parser.add_argument("--seed", type=int, default=0, help="seeds the initial weights and the data stream")
    add_distribution_options(parser)
    args = parse_app_args(parser, argv)
    from kbert.config import PRESETS
    from kbert.data.pretraining.instances import OBJECTIVES as DATA_OBJECTIVES
    from kbert.data.pretraining.masking import MASK_UNITS
    from kbert.tasks.electra_pretrainer import GENERATOR_FRACTION

    OBJECTIVES = (*DATA_OBJECTIVES, "electra")  # kbert.recipes.pretrain.OBJECTIVES, whose module loads TensorFlow

    for option, value, names in (("--preset", args.preset, sorted(PRESETS)),
                                 ("--objective", args.objective, OBJECTIVES), ("--mask-unit", args.mask_unit, MASK_UNITS)):
        if value not in names:
            parser.error(f"argument {option}: invalid choice: {value!r} (choose from {', '.join(names)})")
    for option in ("span_p", "max_span", "span_boundary_objective"):
        if args.mask_unit != "span" and getattr(args, option) != parser.get_default(option):
            parser.error(f"--{option.replace('_', '-')} is a setting of span masking: give it with --mask-unit span")
    if args.generator_fraction is not None and args.objective != "electra":
        parser.error(f"argument --generator-fraction: sizes ELECTRA's generator; give it with --objective electra "
                     f"(not {args.objective}).")
    if args.generator_fraction is not None and not 0 < args.generator_fraction <= 1:
        parser.error(f"argument --generator-fraction: {args.generator_fraction} would make the generator "
                     f"{'wider than the model' if args.generator_fraction > 1 else 'of no width'}: give a fraction in "
                     "(0, 1] of the model's width (ELECTRA uses 1/4 to 1/2).")
    if args.objective == "electra" and args.generator_fraction is None:
        args.generator_fraction = GENERATOR_FRACTION  # recorded in settings.json: a rerun must repeat it
    if args.steps % args.checkpoint_every:
        parser.error(f"--steps {args.steps} is not a multiple of --checkpoint-every {args.checkpoint_every} "
                     f"(a run trains whole checkpoint intervals)")
    run_name = pathlib.PurePath(args.run)
    if not args.run.strip() or run_name.is_absolute() or {".", ".."} & set(run_name.parts) or not run_name.parts:
        parser.error(f"--run {args.run!r}: give a name for the folder inside --output ({args.output})")
    return args


def check_distribution(args, settings):
    """Sets --distribution (and --mesh) before any weight exists (on torch, joins torchrun's processes);
    refuses, before the run folder is touched, a mesh the model does not divide or a --batch-size the
    data dimension does not."""
    import kbert.distribution
    from kbert.config import BertConfig

    config = BertConfig.from_dict(settings["config"]) if settings["config"] else args.preset
    apply_distribution(args, config=args.init or config)  # a folder's config is checked when fit starts
    devices = kbert.distribution.data_dimension()
    if args.batch_size % devices:
        raise ValueError(f"--batch-size {args.batch_size} does not divide by the data dimension {devices} of "
                         f"--distribution {args.distribution}: each device takes an equal share of a batch.")


def check_inputs(args):
    """The corpus files (--corpus with its glob patterns expanded, in sorted order, each file once).
    Raises an error naming the argument (and the line) when a file of --corpus or --vocab is
    missing, a pattern matches no file, or a corpus line is not UTF-8: before the run folder is touched."""
    from kbert.data.readers.text_file import check_utf8

    files = []
    for given in args.corpus:
        matches = sorted(glob.glob(given)) if glob.has_magic(given) else [given]
        if not matches:
            raise FileNotFoundError(f"--corpus {given}: the pattern matches no file.")
        for path in map(pathlib.Path, matches):
            if not path.is_file():
                problem = "a folder, not a text file" if path.is_dir() else "no such file"
                raise FileNotFoundError(f"--corpus {path}: {problem}.")
            if path.resolve() not in {file.resolve() for file in files}:
                check_utf8(path)
                files.append(path)
    vocab = args.vocab and pathlib.Path(args.vocab)
    if vocab and not (vocab.is_file() or (vocab / "vocab.txt").is_file()):
        raise FileNotFoundError(f"--vocab {vocab}: neither a vocab.txt nor a folder holding one.")
    if args.tokenizer:
        from kbert.text.hf_tokenizers import tokenizer_kind

        if args.vocab:
            raise ValueError(f"--tokenizer {args.tokenizer} and --vocab {args.vocab} both give the tokenizer: "
                             "drop one.")
        try:
            tokenizer_kind(args.tokenizer)
        except FileNotFoundError as error:
            raise FileNotFoundError(f"--tokenizer: {error}") from None
    if args.init:
        from kbert.saving import model_source

        given = [(name, value) for name, value in (("--vocab", args.vocab), ("--tokenizer", args.tokenizer),
                                                   ("--config", args.config)) if value]
        if given:
            raise ValueError(f"--init {args.init} brings its own config and vocabulary: drop "
                             f"{' and '.join(name for name, _ in given)}.")
        try:
            model_source(args.init)
        except FileNotFoundError as error:
            raise FileNotFoundError(f"--init: {error}") from None
    return files


def run_settings(args, files):
    """The settings that make the run what it is (settings.json): the arguments, with the files they
    name made absolute, each corpus file's path, size and SHA-256 (the run reads the files where
    they are: an edited corpus is another run) and the content of --config."""
    from kbert.training.model_card import sha256

    settings = {key: value for key, value in vars(args).items() if key not in NOT_SETTINGS}
    if args.gradient_accumulation == 1:
        del settings["gradient_accumulation"]  # recorded when used: runs from before the option resume
    # --mask-unit token or whole_word recorded as runs from before --mask-unit recorded --whole-word-masking (they
    # resume); span, with its lengths' settings, beside it
    settings["whole_word_masking"] = settings["mask_unit"] == "whole_word"
    if args.mask_unit != "span":
        for name in ("mask_unit", "span_p", "max_span", "span_boundary_objective"):
            del settings[name]
    if args.minutes is None:
        del settings["minutes"]  # recorded when used: runs from before the option resume
    if args.objective != "electra":
        del settings["generator_fraction"]  # ELECTRA's alone: runs from before the option resume
    if args.tokenizer is None:
        del settings["tokenizer"]  # recorded when used: runs from before the option resume
    else:
        settings["tokenizer"] = str(pathlib.Path(args.tokenizer).resolve())
    settings.update(corpus=[{"path": str(path.resolve()), "bytes": path.stat().st_size, "sha256": sha256(path)}
                            for path in files],
                    vocab=args.vocab and str(pathlib.Path(args.vocab).resolve()), config=read_config(args.config),
                    init=args.init and (str(pathlib.Path(args.init).resolve()) if pathlib.Path(args.init).is_dir()
                                        else args.init))
    return settings


def read_config(path):
    """The fields of the BertConfig JSON file `path` (None without one); errors name the file."""
    if path is None:
        return None
    from kbert.config import BertConfig

    try:
        fields = json.loads(pathlib.Path(path).read_text("utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"--config {path}: no such file.") from None
    except ValueError as error:  # bad JSON, or not UTF-8
        raise ValueError(f"--config {path}: not a JSON file ({error}).") from None
    if not isinstance(fields, dict):
        raise ValueError(f"--config {path}: expected a JSON object of BertConfig fields.")
    try:
        BertConfig.from_dict(fields)
    except (TypeError, ValueError) as error:
        raise ValueError(f"--config {path}: {error}") from None
    return fields


def main(argv=None):
    args = parse_args(argv)
    folder = pathlib.Path(args.output) / args.run
    files = check_inputs(args)
    settings = run_settings(args, files)
    check_distribution(args, settings)
    from kbert.distribution import chief_first, is_chief
    from kbert.recipes import pretrain as recipe
    from kbert.saving import claim_run_folder
    from run_checks import flag_names, refusing_in_flags

    with contextlib.ExitStack() as stack:
        def claim():  # process 0 of a job alone (the others wait, and stop if it fails)
            stack.enter_context(claim_run_folder(folder, "--run", replaces=False))
            stack.enter_context(for_people(args))
            new = args.restart or not recipe.is_prepared(folder)
            if not new:
                return []
            learned = 0 if args.vocab or args.tokenizer else args.vocab_lines  # lines to learn a vocabulary from
            return recipe.check_corpus(files, args.holdout_fraction, learned, args.seed,
                                       args.objective, named=flag_names(args))

        sample = chief_first(claim, list)
        if not is_chief():  # trains with process 0 on its share of each batch; writes and prints nothing
            stack.enter_context(contextlib.redirect_stdout(stack.enter_context(open(os.devnull, "w"))))
        init = args.init and recipe.load_init(args.init, args.mixed_precision, args.remat)
        if init and args.seq_len > init[0].max_sequence_length:
            raise ValueError(f"--seq-len {args.seq_len} exceeds the {init[0].max_sequence_length} positions "
                             f"of --init {args.init}: give --seq-len {init[0].max_sequence_length} or less.")
        with refusing_in_flags(args):
            metrics = recipe.train(
                files, folder, settings, init=init or None, preset=args.preset, config=settings["config"],
                vocabulary=args.vocab or args.tokenizer, vocabulary_sample=sample, vocabulary_size=args.vocab_size,
                objective=args.objective, mask_unit=args.mask_unit, span_p=args.span_p, max_span=args.max_span,
                span_boundary=args.span_boundary_objective,
                duplication_factor=args.duplication_factor, steps=args.steps, checkpoint_every=args.checkpoint_every,
                batch_size=args.batch_size, sequence_length=args.seq_len, learning_rate=args.lr,
                warmup_ratio=args.warmup_ratio, holdout_fraction=args.holdout_fraction,
                mixed_precision=args.mixed_precision, seed=args.seed, gradient_accumulation=args.gradient_accumulation,
                remat=args.remat, restart=args.restart, verbose=0 if args.quiet else "auto",
                generator_fraction=args.generator_fraction,  # None unless --objective electra, which alone reads it
                minutes=args.minutes, named=flag_names(args, {"vocabulary": "tokenizer"}))
        print(f"Fine-tune it: --init {folder} in the task apps.")
    if args.json and is_chief():
        emit(args, [metrics])


if __name__ == "__main__":
    run(main)

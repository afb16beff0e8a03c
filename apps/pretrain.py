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
--vocab-lines training lines), backup/ (the checkpoint), logs/ (TensorBoard), history.csv,
curves.png, metrics.json (the settings, held-out MLM and NSP accuracy before and after training),
README.md (the model card: versions, corpus checksums, settings, metrics) and, at the end,
backbone.keras: `--init saved_models/<run>` for the task apps.

--init continues pretraining from a checkpoint instead of random weights (e.g. --init all_minilm_l6_v2:
its config and vocabulary; the MLM head starts fresh, its decoder tied to the embeddings).

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
import csv
import glob
import json
import math
import os
import pathlib
import resource
import shutil
import sys
import tempfile

from app_cli import app_parser, emit, for_people
from app_cli import parse_args as parse_app_args
from cli_errors import run
from task_cli import (add_distribution_options, apply_distribution, non_negative_int, positive_float, positive_int,
                      ratio, sequence_length)

MAY_CHANGE = ("steps",)  # the settings a resumed run may change; the others make the run what it is
# How it runs, not what it trains: a run may resume on another mesh.
NOT_SETTINGS = ("run", "output", "restart", "json", "verbose", "quiet", "distribution", "mesh", "remat")
RENAMED = {"task": "objective"}  # settings.json names of runs started before a rename: old -> new


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
    parser.add_argument("--preset", default="bert_mini", help="a size of kbert.config.PRESETS, bert_tiny to bert_large")
    parser.add_argument("--config", help="a JSON file of BertConfig fields (instead of --preset)")
    parser.add_argument("--vocab", help="a vocab.txt (or a folder with one); default: learn one from the corpus")
    parser.add_argument("--init", help="continue pretraining from these weights instead of random ones: "
                                       "'all_minilm_l6_v2', a Hugging Face BERT folder, a folder apps/pretrain.py "
                                       "wrote, a task run folder; its config and vocabulary replace --preset, "
                                       "--config and --vocab; the MLM head starts fresh (decoder tied to the "
                                       "embeddings)")
    parser.add_argument("--vocab-size", type=positive_int, default=8192, help="size of the learned vocabulary")
    parser.add_argument("--vocab-lines", type=positive_int, default=20000,
                        help="training lines (drawn at random) the vocabulary is learned from")
    parser.add_argument("--objective", default="nsp",
                        help="beside masked LM: nsp (next sentence), sop (ALBERT's sentence order) or mlm (none)")
    parser.add_argument("--task", dest="objective", action=FormerName, help=argparse.SUPPRESS)
    parser.add_argument("--whole-word-masking", action="store_true", help="mask every piece of a chosen word")
    parser.add_argument("--duplication-factor", type=non_negative_int, default=0, help="static masking with this many copies (default: dynamic)")
    parser.add_argument("--steps", type=non_negative_int, default=10000,
                        help="optimizer steps of the whole run, a multiple of --checkpoint-every (0: save the "
                             "random init); may be raised on a rerun to train further")
    parser.add_argument("--checkpoint-every", type=positive_int, default=200, help="steps between checkpoints (one Keras epoch)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress (by default a bar on a terminal, else a line every 30 s with the time left)")
    parser.add_argument("--batch-size", type=positive_int, default=32)
    parser.add_argument("--seq-len", type=sequence_length, default=128)
    parser.add_argument("--lr", type=positive_float, default=1e-4, help="peak learning rate")
    parser.add_argument("--warmup-ratio", type=ratio, default=0.01, help="share of the steps warming up, in [0, 1]")
    parser.add_argument("--holdout-fraction", type=ratio, default=0.02,
                        help="share of the text held out for evaluation: documents, or 20-line passages of longer "
                             "ones, chosen by a hash of their text (0: none)")
    parser.add_argument("--mixed-precision", action="store_true", help="mixed_bfloat16 compute")
    parser.add_argument("--seed", type=int, default=0, help="seeds the initial weights and the data stream")
    add_distribution_options(parser)
    args = parse_app_args(parser, argv)
    from kbert.config import PRESETS
    from kbert.data.pretraining_instances import OBJECTIVES

    for option, value, names in (("--preset", args.preset, sorted(PRESETS)), ("--objective", args.objective, OBJECTIVES)):
        if value not in names:
            parser.error(f"argument {option}: invalid choice: {value!r} (choose from {', '.join(names)})")
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
    from kbert.data.text_file import check_utf8

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
    if args.init:
        from kbert.saving import is_preset

        if args.vocab or args.config:
            raise ValueError(f"--init {args.init} brings its own config and vocabulary: drop "
                             f"{' and '.join(name for name, value in (('--vocab', args.vocab), ('--config', args.config)) if value)}.")
        if not is_preset(args.init) and not pathlib.Path(args.init).is_dir():
            raise FileNotFoundError(f"--init {args.init}: neither a preset name nor a folder.")
    return files


def run_settings(args, files):
    """The settings that make the run what it is (settings.json): the arguments, with the files they
    name made absolute, each corpus file's path, size and SHA-256 (the run reads the files where
    they are: an edited corpus is another run) and the content of --config."""
    from kbert.training.model_card import sha256

    settings = {key: value for key, value in vars(args).items() if key not in NOT_SETTINGS}
    if args.gradient_accumulation == 1:
        del settings["gradient_accumulation"]  # recorded when used: runs from before the option resume
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


def check_resumable(folder, settings):
    """Raises RunFolderError unless `folder` is new, or a pretraining run started with `settings`
    (but `MAY_CHANGE`) that has not trained past `settings["steps"]`."""
    from kbert.saving import MODEL_FILE, SETTINGS_FILE, RunFolderError
    from run_checks import check_run_settings

    if not folder.is_dir() or not any(folder.iterdir()):
        return
    if not (folder / SETTINGS_FILE).is_file():
        if (folder / MODEL_FILE).is_file():
            raise RunFolderError(f"--run {folder} holds a fine-tuned model ({MODEL_FILE}), not a pretraining run: "
                                 f"choose another --run.")
        if (folder / "vocab.txt").is_file():
            raise RunFolderError(f"--run {folder} records no {SETTINGS_FILE} (a run from before kbert kept them), "
                                 f"so a rerun cannot be checked against it: start over with --restart, or choose "
                                 f"another --run.")
        return  # a run killed while writing its data split, before it was prepared: prepared again
    check_run_settings(folder, settings, may_change=MAY_CHANGE, renamed=RENAMED)
    trained = resumed_step(folder / "backup")
    if settings["steps"] < trained:
        raise RunFolderError(f"--run {folder} has trained {trained} steps already: --steps {settings['steps']} "
                             f"cannot undo them (start over with --restart).")


def start_over(folder):
    """Deletes the pretraining run folder `folder` (for --restart); refuses a folder of anything else."""
    from kbert.saving import BACKBONE_FILE, MODEL_FILE, SETTINGS_FILE, RunFolderError

    if not folder.exists():
        return
    marks = (SETTINGS_FILE, "backup", BACKBONE_FILE, "train.txt", "history.csv")
    if not folder.is_dir() or (folder / MODEL_FILE).exists() or not any((folder / m).exists() for m in marks):
        raise RunFolderError(f"--restart: {folder} is not a pretraining run folder; not deleting it. "
                             f"Choose another --run.")
    trash = pathlib.Path(tempfile.mkdtemp(prefix=f".{folder.name}.deleted-", dir=folder.parent))
    folder.rename(trash / folder.name)  # gone at once: a kill during the deletion leaves no half run
    shutil.rmtree(trash)
    print(f"--restart: deleted {folder}.", flush=True)


def remove_deleted(folder):
    """Removes what a kill during `start_over` left beside `folder`."""
    for trash in folder.parent.glob(f".{glob.escape(folder.name)}.deleted-*"):
        shutil.rmtree(trash, ignore_errors=True)


def check_split(files, args):
    """Reads the corpus once: raises ValueError, naming the files and the numbers, when the training
    split (or, with --holdout-fraction, the held-out one) would be empty; notes files with no text.
    Returns the training lines to learn the vocabulary from (none with --vocab)."""
    from kbert.data.pretraining_instances import HOLDOUT_PASSAGE_LINES, survey_corpus

    survey = survey_corpus(files, args.holdout_fraction, 0 if args.vocab else args.vocab_lines, args.seed)
    train, held = survey["train"], survey["held_out"]
    names = " ".join(map(str, files))
    counts = (f"{train['documents'] + held['documents']} documents and {train['lines'] + held['lines']} lines "
              f"(a document over {HOLDOUT_PASSAGE_LINES} lines counts as its passages of {HOLDOUT_PASSAGE_LINES})")
    if not train["documents"] + held["documents"]:
        raise ValueError(f"--corpus {names}: no text in {len(files)} file(s).")
    if not train["documents"]:
        raise ValueError(f"--corpus {names}: the training split is empty: --holdout-fraction {args.holdout_fraction} "
                         f"holds out all of its {counts}. Lower --holdout-fraction.")
    if args.holdout_fraction and not held["documents"]:
        raise ValueError(f"--corpus {names}: the held-out split is empty: --holdout-fraction {args.holdout_fraction} "
                         f"of its {counts} holds out none (passages are held out by a hash of their text). "
                         f"Raise --holdout-fraction, or give 0 to train without held-out evaluation.")
    for side, split in (("training", train), ("held-out", held)):
        if args.objective == "nsp" and split["documents"] == 1:
            raise ValueError(f"--corpus {names}: the {side} split holds one document, so next-sentence prediction "
                             f"has no random second segments. Separate documents with a blank line, or use --objective mlm "
                             f"or sop.")
    for path in survey["empty_files"]:
        print(f"--corpus {path}: no text, skipped.", flush=True)
    print(f"Corpus: {train['documents']} documents ({train['lines']} lines) to train on, {held['documents']} "
          f"({held['lines']} lines) held out.", flush=True)
    return survey["sample"]


def prepare_run(args, folder, settings, files, init_tokenizer=None):
    """Checks the split and writes the settings and the vocabulary (`init_tokenizer`'s with --init)
    once; a resumed run reads them back."""
    from kbert.text import BertTokenizer, train_wordpiece_vocabulary
    from kbert.saving import SETTINGS_FILE, read_json, write_json_atomic

    if not (folder / "vocab.txt").is_file():
        sample = check_split(files, args)
        if init_tokenizer is not None:
            tokenizer = init_tokenizer
        elif args.vocab:
            tokenizer = BertTokenizer.from_vocab(args.vocab)
        else:
            print(f"Learning a {args.vocab_size}-token WordPiece vocabulary from {len(sample)} training lines",
                  flush=True)
            tokenizer = BertTokenizer(train_wordpiece_vocabulary(sample, args.vocab_size))
        folder.mkdir(parents=True, exist_ok=True)
        write_json_atomic(folder / SETTINGS_FILE, settings)
        with tempfile.TemporaryDirectory(dir=folder) as temporary:
            tokenizer.save(temporary)
            for name in ("tokenizer_config.json", "vocab.txt"):  # vocab.txt last: marks "prepared"
                os.replace(pathlib.Path(temporary) / name, folder / name)
    elif read_json(folder / SETTINGS_FILE) != settings:  # --steps raised: the run goes further
        write_json_atomic(folder / SETTINGS_FILE, settings)
    return BertTokenizer.from_hf(folder)


def resumed_step(backup):
    """The optimizer step of the checkpoint in `backup` (0 when starting afresh)."""
    from kbert.saving import read_json

    return read_json(backup / "training_metadata.json", missing={}).get("step", 0)


def kept_batches(batches):
    """The list `batches` (the held-out global batches) as a `keras.utils.PyDataset`: `fit`'s validation and
    `evaluate` read it as it is, batch by batch, and a job of several JAX processes shares it out (`process_share`)."""
    import keras

    class Kept(keras.utils.PyDataset):
        def __len__(self):
            return len(batches)

        def __getitem__(self, index):
            return batches[index]

    return Kept()


def read_history(path):
    """history.csv as {metric: [per-epoch values]}; a resumed epoch keeps its last row.

    Without held-out data Keras's CSVLogger still writes val_ columns, all "NA": left out.
    """
    if not path.is_file():
        return {}
    with open(path) as f:
        rows = {int(row["epoch"]): row for row in csv.DictReader(f)}
    names = [name for name in next(iter(rows.values()), {})
             if name != "epoch" and all(row[name] != "NA" for row in rows.values())]
    return {name: [float(rows[epoch][name]) for epoch in sorted(rows)] for name in names}


def main(argv=None):
    args = parse_args(argv)
    folder = pathlib.Path(args.output) / args.run
    files = check_inputs(args)
    settings = run_settings(args, files)
    check_distribution(args, settings)
    from kbert.distribution import chief_first, is_chief
    from kbert.saving import claim_run_folder

    with contextlib.ExitStack() as stack:
        def claim():  # process 0 of a job alone (the others wait, and stop if it fails)
            stack.enter_context(claim_run_folder(folder, "--run", replaces=False))
            stack.enter_context(for_people(args))
            remove_deleted(folder)
            if args.restart:
                start_over(folder)
            check_resumable(folder, settings)

        chief_first(claim)
        if not is_chief():  # trains with process 0 on its share of each batch; writes and prints nothing
            stack.enter_context(contextlib.redirect_stdout(stack.enter_context(open(os.devnull, "w"))))
        metrics = pretrain(args, folder, settings, files)
    if args.json and is_chief():
        emit(args, [metrics])


def pretrain(args, folder, settings, files):
    """Prepares (or resumes) the run in `folder` on the corpus `files` and trains it to `args.steps`;
    saves backbone.keras.
    Returns the metrics written to metrics.json."""
    import keras

    from kbert.distribution import chief_first, describe, is_chief, process_share, torch_data_parallel, writing_alone
    from kbert.distribution.data_shares import shares
    from kbert.saving import read_json, save_backbone
    from kbert.config import PRESETS, BertConfig
    from kbert.data.pretraining_dataset import pretraining_dataset
    from kbert.data.process_batches import process_batches
    from kbert.models.bert_backbone import BertBackbone
    from kbert.models.load_backbone import load_backbone
    from kbert.text import BertTokenizer
    from kbert.optimizers import bert_adamw
    from kbert.tasks.bert_pretrainer import BertPretrainer
    from kbert.training import AtomicBackupAndRestore, StopOnNonFiniteLoss, plot_history
    from kbert.training.fit_progress import fit_progress
    from kbert.training.model_card import write_model_card
    from kbert.training.remat import rematerialized
    from kbert.training.training_logs import HISTORY_FILE, training_logs

    if args.mixed_precision:
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    keras.utils.set_random_seed(args.seed)  # the initial weights (a resumed run then loads its own)
    with rematerialized(args.remat):
        if args.init:  # continued pretraining: the checkpoint's weights, config and vocabulary
            backbone, init_tokenizer = load_backbone(args.init)
            if args.seq_len > backbone.max_sequence_length:
                raise ValueError(f"--seq-len {args.seq_len} exceeds the {backbone.max_sequence_length} positions "
                                 f"of --init {args.init}: give --seq-len {backbone.max_sequence_length} or less.")
        else:
            init_tokenizer = None
        # process 0 writes the settings and vocabulary; a job's others then read them
        tokenizer = chief_first(lambda: prepare_run(args, folder, settings, files, init_tokenizer),
                                lambda: BertTokenizer.from_hf(folder))
        if not args.init:
            config = BertConfig.from_dict(settings["config"]) if settings["config"] else PRESETS[args.preset]
            backbone = BertBackbone(**{**config.to_dict(), "vocabulary_size": tokenizer.vocabulary_size})
        model = BertPretrainer(backbone, next_sentence=args.objective != "mlm")
    epochs = math.ceil(args.steps / args.checkpoint_every)
    model.compile(optimizer=bert_adamw(args.lr, max(epochs * args.checkpoint_every, 1), args.warmup_ratio,
                                       gradient_accumulation_steps=args.gradient_accumulation))
    batches_per_epoch = args.checkpoint_every * args.gradient_accumulation  # fit counts batches

    data_options = dict(tokenizer=tokenizer, batch_size=args.batch_size, max_seq_length=args.seq_len,
                        objective=args.objective, whole_word_masking=args.whole_word_masking, holdout=args.holdout_fraction)
    masking = dict(masking="static", duplication_factor=args.duplication_factor) if args.duplication_factor else {}
    # The tf.data pipeline runs in a child process (see process_batches: in this one it
    # would slow torch's steps about 2x). A resumed run reads the stream of the run it
    # resumes (same seed) past the batches trained already: the same pairs, order and masks
    # as if it had never stopped. The held-out batches are made once and kept.
    # In a job of several processes every process draws the same global batches and trains on its share of each.
    # The child loads TensorFlow: its start-up lines are dropped too, unless --verbose.
    from kbert_edge.start_up import START_UP_LINE

    quiet = None if args.verbose else lambda line: not START_UP_LINE.match(line)
    trained_batches = resumed_step(folder / "backup") * args.gradient_accumulation
    if trained_batches:
        print(f"Resuming after {trained_batches} batches: reading the data stream past them (same order and "
              "masks as an uninterrupted run).", flush=True)
    data = process_batches(pretraining_dataset, files, seed=args.seed, skip_batches=trained_batches,
                           stderr_filter=quiet, **data_options, **masking)
    held_out = args.holdout_fraction and kept_batches(list(process_batches(
        pretraining_dataset, files, held_out=True, masking="static", duplication_factor=1, repeat=False,
        shuffle_buffer=0, seed=1, stderr_filter=quiet, **data_options)))

    def evaluate():  # every process (across JAX processes a collective step, each on its share of each batch)
        return model.evaluate(process_share(held_out), return_dict=True, verbose=0)

    metrics_path = folder / "metrics.json"
    metrics = read_json(metrics_path, missing={})
    backup = AtomicBackupAndRestore(folder / "backup", steps_per_epoch=args.checkpoint_every)  # optimizer steps
    if held_out and "start" not in metrics and not (folder / "backup").exists():
        metrics["start"] = evaluate()
        print("held-out before training:", json.dumps(metrics["start"]), flush=True)
        if is_chief():
            metrics_path.write_text(json.dumps(metrics, indent=2))

    verbose, progress = fit_progress(0 if args.quiet else "auto", title="pretrain")
    callbacks = [StopOnNonFiniteLoss(backup), backup, *training_logs(folder), *progress]
    # shuffle=False: the pipeline shuffles (Keras would warn that it ignores shuffle=True).
    with contextlib.closing(data):
        if epochs:  # --steps 0 makes the vocabulary and the initial backbone: no batch is drawn, no child started
            mine = shares(data) if torch_data_parallel.active() else process_share(data)
            model.fit(mine, epochs=epochs, steps_per_epoch=batches_per_epoch, callbacks=callbacks,
                      validation_data=process_share(held_out) if held_out else None, shuffle=False,
                      verbose=verbose)
    if held_out:
        metrics["end"] = evaluate()
        print("held-out after training:", json.dumps(metrics["end"]), flush=True)
    if not is_chief():  # process 0 saves and reports the weights every process holds
        return None

    metrics["steps"] = int(keras.ops.convert_to_numpy(model.optimizer.iterations))  # optimizer steps
    metrics["backend"] = keras.config.backend()
    metrics["distribution"] = describe()
    metrics["settings"] = vars(args)  # the command line, for whoever reads the run folder later
    history = read_history(folder / HISTORY_FILE)
    if history:
        plot_history(history, folder / "curves.png",
                     title=f"{args.run}: one epoch = {args.checkpoint_every} steps of {args.batch_size}")
    with tempfile.TemporaryDirectory(dir=folder) as temporary, writing_alone():  # a kill never leaves half a file
        save_backbone(temporary, backbone, tokenizer)
        os.replace(pathlib.Path(temporary) / "backbone.keras", folder / "backbone.keras")
    metrics_path.write_text(json.dumps(metrics, indent=2))
    hyperparameters = {k: v for k, v in settings.items() if k != "corpus"}
    write_model_card(folder, f"{args.run}: BERT pretrained from scratch", {"corpus": files, "vocab": args.vocab},
                     hyperparameters, {k: v for k, v in metrics.items() if k != "settings"})
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> (20 if sys.platform == "darwin" else 10)  # MB
    print(f"Saved {folder / 'backbone.keras'} (use --init {folder}); peak memory of this process: {peak} MB")
    return metrics


if __name__ == "__main__":
    run(main)

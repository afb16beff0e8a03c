"""Pretrain BERT (masked LM, beside next-sentence or sentence-order prediction, or alone; or ELECTRA's replaced-token
detection) on text files: the library side of apps/pretrain.py, on the skeleton every training run shares
(`kbert.training.training_run`).

A pretraining run folder grows as the run goes: `settings.json` first (`kbert.training.resume_policy`, which decides
whether a rerun resumes, is refused or starts over, as for every training run), the tokenizer (`prepare`: of any
kind, `kbert.text.hf_tokenizers`: a learned WordPiece vocabulary, or a given one, an ALBERT-shaped model's
SentencePiece, a RoBERTa-shaped model's byte-level BPE),
`history.csv` and TensorBoard's `logs/` while it trains, then `backbone.keras` (and, for BERT's masked LM, `masked_lm/`:
the model with its heads as a Hugging Face folder, `writes_masked_lm`), `curves.png`, `metrics.json` and the
model card. Its backup lives beside it, as every training run's (`.NAME.backup/`), and stays when the run ends: a rerun
with more `steps` trains further from it.
"""

import contextlib
import json
import os
import pathlib
import resource
import shutil
import sys
import tempfile

import keras

from kbert.config import PRESETS, BertConfig
from kbert.convert import save_hf
from kbert.data.batches.child_process import process_batches
from kbert.data.pretraining.dataset import held_out_then_training
from kbert.data.pretraining.instances import HOLDOUT_PASSAGE_LINES, OBJECTIVES as DATA_OBJECTIVES, survey_corpus
from kbert.data.pretraining.masking import check_masking
from kbert.distribution import chief_first, is_chief, process_share, torch_data_parallel, writing_alone
from kbert.distribution.data_shares import shares
from kbert.models.bert_backbone import BertBackbone
from kbert.optimizers import bert_adamw
from kbert.optimizers.mixed_precision import check_mixed_precision, mixed_compute
from kbert.saving import (BACKBONE_FILE, CHECKSUMS_FILE, METRICS_FILE, model_source, read_json, record_checksums,
                          save_backbone, write_json_atomic)
from kbert.tasks.bert_pretrainer import BertPretrainer
from kbert.tasks.electra_pretrainer import GENERATOR_FRACTION, ElectraPretrainer, generator_dimensions
from kbert.text import BertTokenizer, load_hf_tokenizer, train_wordpiece_vocabulary
from kbert.text.hf_tokenizers import FAMILY_KINDS, KIND_FILES, tokenizer_kind
from kbert.training.curves import plot_history
from kbert.training.model_card import write_model_card
from kbert.training.remat import rematerialized
from kbert.training.resume_policy import KeptRunFolder, ResumeRefusedError, backed_up_step, run_backup
from kbert.training.time_budget import TimeBudget
from kbert.training.training_logs import HISTORY_FILE, training_logs
from kbert.training.training_run import training_run
from kbert_core.start_up import START_UP_LINE, verbose as start_up_verbose

# What marks a pretraining run folder beside settings.json: its tokenizer's files (the last one `prepare` writes marks
# it prepared), older kbert's too (its corpus split, its backup inside)
MARKS = (*dict.fromkeys(name for names in KIND_FILES.values() for name in names), BACKBONE_FILE, HISTORY_FILE,
         "train.txt", "backup")
RENAMED = {"task": "objective"}  # the settings of runs started before a rename: former name -> name now
# What is learned: the data's objectives (masked LM beside NSP, SOP or nothing), or ELECTRA's replaced-token detection
# (`ElectraPretrainer`, on the masked-LM data of "mlm")
OBJECTIVES = (*DATA_OBJECTIVES, "electra")

MASKED_LM_FOLDER = "masked_lm"  # the run's masked LM with its heads, a Hugging Face folder (`writes_masked_lm`)


def writes_masked_lm(model):
    """Whether a run of `model` also writes it whole, heads and all, as a Hugging Face folder (`MASKED_LM_FOLDER`:
    `BertForMaskedLM` or `BertForPreTraining`, a family's `ForMaskedLM`), for `BertPretrainer.fill_mask` and
    `transformers`: a `BertPretrainer` of heads Hugging Face has a class for (no span-boundary head; next-sentence
    or sentence-order heads on BERT only). ELECTRA's run keeps the discriminator alone."""
    return (isinstance(model, BertPretrainer) and not model.span_boundary
            and (not model.next_sentence or model.backbone.family == "bert"))


def check_corpus(files, holdout_fraction=0.0, vocabulary_lines=0, seed=0, objective="nsp", named=str):
    """Reads the corpus once, before anything is written: raises ValueError, naming the files and the numbers, when
    the training split (or, with `holdout_fraction`, the held-out one) would be empty, or when next-sentence
    prediction would have one document to draw second segments from; notes files with no text. Each setting is
    written `named(name)` in messages (an app names its flags). Returns `vocabulary_lines` random training lines
    to learn a vocabulary from.

    Example:
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "one.txt"
    >>> _ = path.write_text("One document.\\n")
    >>> check_corpus([path], objective="mlm", vocabulary_lines=5)
    Corpus: 1 documents (1 lines) to train on, 0 (0 lines) held out.
    ['One document.']
    >>> check_corpus([path], named=str.upper)
    Traceback (most recent call last):
    ValueError: CORPUS ...one.txt: the training split holds one document, so next-sentence prediction ...
    """
    survey = survey_corpus(files, holdout_fraction, vocabulary_lines, seed)
    train, held = survey["train"], survey["held_out"]
    corpus = f"{named('corpus')} {' '.join(map(str, files))}"
    counts = (f"{train['documents'] + held['documents']} documents and {train['lines'] + held['lines']} lines "
              f"(a document over {HOLDOUT_PASSAGE_LINES} lines counts as its passages of {HOLDOUT_PASSAGE_LINES})")
    holdout = f"{named('holdout_fraction')} {holdout_fraction}"
    if not train["documents"] + held["documents"]:
        raise ValueError(f"{corpus}: no text in {len(files)} file(s).")
    if not train["documents"]:
        raise ValueError(f"{corpus}: the training split is empty: {holdout} holds out all of its {counts}. "
                         f"Lower {named('holdout_fraction')}.")
    if holdout_fraction and not held["documents"]:
        raise ValueError(f"{corpus}: the held-out split is empty: {holdout} of its {counts} holds out none "
                         f"(passages are held out by a hash of their text). Raise {named('holdout_fraction')}, or "
                         f"give 0 to train without held-out evaluation.")
    for side, split in (("training", train), ("held-out", held)):
        if objective == "nsp" and split["documents"] == 1:
            raise ValueError(f"{corpus}: the {side} split holds one document, so next-sentence prediction has no "
                             f"random second segments. Separate documents with a blank line, or use "
                             f"{named('objective')} mlm or sop.")
    for path in survey["empty_files"]:
        print(f"{named('corpus')} {path}: no text, skipped.", flush=True)
    print(f"Corpus: {train['documents']} documents ({train['lines']} lines) to train on, {held['documents']} "
          f"({held['lines']} lines) held out.", flush=True)
    return survey["sample"]


def load_init(init, mixed_precision=False, remat=False):
    """`(backbone, tokenizer)` of `init` (a `BertBackbone.from_preset` source, of any family) to continue pretraining
    from, its tokenizer of its family's kind (`kbert.text.load_hf_tokenizer`), computing as `mixed_precision` asks
    (`kbert.optimizers.mixed_compute`: True or "bfloat16", "float16", False) and recomputing its blocks in the
    backward pass with `remat`.

    Example:
    >>> backbone, tokenizer = load_init("bert_tiny")
    >>> backbone.max_sequence_length
    512
    """
    with mixed_compute(mixed_precision), rematerialized(remat):
        source = model_source(init)  # its files read once
        backbone = BertBackbone.from_preset(source)
        return backbone, source.load_tokenizer(load_hf_tokenizer, backbone)


def is_prepared(folder):
    """Whether the run folder `folder` holds its tokenizer already (`prepare`): every file of one kind
    (`kbert.text.hf_tokenizers.KIND_FILES`): a run to resume, unless started over."""
    try:
        tokenizer_kind(folder)
    except FileNotFoundError:
        return False
    return True


def read_tokenizer(vocabulary):
    """The tokenizer of `vocabulary`: a vocab.txt file (WordPiece), or a tokenizer folder of any kind
    (`kbert.text.load_hf_tokenizer`: vocab.txt, spiece.model, or vocab.json and merges.txt).

    Example:
    >>> read_tokenizer("no/such/folder")
    Traceback (most recent call last):
    FileNotFoundError: no/such/folder holds no tokenizer: expected vocab.txt (WordPiece), spiece.model ...
    """
    path = pathlib.Path(vocabulary)
    return BertTokenizer.from_vocab(path) if path.is_file() else load_hf_tokenizer(path)


def prepare(folder, tokenizer=None, vocabulary=None, vocabulary_sample=(), vocabulary_size=8192):
    """Writes the tokenizer of the run folder `folder` once (with its own `save`); returns it.

    It is `tokenizer` (an init's, or one given: any kind), else `read_tokenizer(vocabulary)`, else a
    WordPiece vocabulary of `vocabulary_size` tokens learned from the lines `vocabulary_sample`. A
    prepared folder keeps its own (`is_prepared`: the kind's files are moved in last).

    Example:
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "run"
    >>> tokenizer = prepare(folder, vocabulary_sample=["a cat sat on the mat"] * 20, vocabulary_size=40)
    Learning a 40-token WordPiece vocabulary from 20 training lines
    >>> sorted(path.name for path in folder.iterdir()), is_prepared(folder)
    (['tokenizer_config.json', 'vocab.txt'], True)
    """
    folder = pathlib.Path(folder)
    if is_prepared(folder):
        return load_hf_tokenizer(folder)
    if tokenizer is None and vocabulary:
        tokenizer = read_tokenizer(vocabulary)
    elif tokenizer is None:
        print(f"Learning a {vocabulary_size}-token WordPiece vocabulary from {len(vocabulary_sample)} training lines",
              flush=True)
        tokenizer = BertTokenizer(train_wordpiece_vocabulary(vocabulary_sample, vocabulary_size))
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as temporary:
        tokenizer.save(temporary)
        for name in ("tokenizer_config.json", *type(tokenizer).FILES):  # the kind's files last: mark "prepared"
            os.replace(pathlib.Path(temporary) / name, folder / name)
    return load_hf_tokenizer(folder)


def check_family(config, objective, tokenizer=None, sized=False, named=str):
    """Refuses, in one line, what the backbone `config` (a `BertConfig`) cannot pretrain: next-sentence or
    sentence-order prediction without token types (RoBERTa's shape: masked LM alone), a tokenizer of another kind
    than its family reads (`kbert.text.hf_tokenizers.FAMILY_KINDS`), none for a family kbert learns no vocabulary
    of, or, when the config is `sized` (it gives `vocabulary_size`), a tokenizer of another size. Each setting is
    written `named(name)` (an app names its flags).

    Example:
    >>> from kbert.config import PRESETS
    >>> check_family(PRESETS["roberta_base"], "nsp")
    Traceback (most recent call last):
    ValueError: objective nsp tells two segments apart by their token types, which a roberta model has none of ...
    """
    kind = FAMILY_KINDS.get(config.family, "wordpiece")
    if objective in ("nsp", "sop") and config.num_segments < 2:
        raise ValueError(f"{named('objective')} {objective} tells two segments apart by their token types, which a "
                         f"{config.family} model has none of (num_segments {config.num_segments}): pretrain it with "
                         f"{named('objective')} mlm (masked LM alone, RoBERTa's recipe) or electra.")
    if tokenizer is None and kind != "wordpiece":
        raise ValueError(f"A {config.family} model reads a {kind} tokenizer ({', '.join(KIND_FILES[kind])}), and "
                         f"kbert learns WordPiece vocabularies only: give one ({named('vocabulary')} FOLDER).")
    if tokenizer is not None and tokenizer.kind != kind:
        raise ValueError(f"A {config.family} model reads a {kind} tokenizer ({', '.join(KIND_FILES[kind])}), not a "
                         f"{tokenizer.kind} one ({', '.join(type(tokenizer).FILES)}): give {named('vocabulary')} "
                         "of its family's kind.")
    if sized and tokenizer is not None and tokenizer.vocabulary_size != config.vocabulary_size:
        raise ValueError(f"{named('config')}: vocabulary_size {config.vocabulary_size} is not the tokenizer's "
                         f"{tokenizer.vocabulary_size} tokens: give the tokenizer's size, or leave vocabulary_size "
                         "out (the tokenizer's is taken).")


def train(files, out, settings, init=None, preset="bert_mini", config=None, vocabulary=None, vocabulary_sample=(),
          vocabulary_size=8192, objective="nsp", mask_unit="token", span_p=0.2, max_span=10, span_boundary=False,
          duplication_factor=0, steps=10000, checkpoint_every=200, batch_size=32, sequence_length=128,
          learning_rate=1e-4, warmup_ratio=0.01, holdout_fraction=0.02, mixed_precision=False, seed=0,
          gradient_accumulation=1, remat=False, restart=False, verbose="auto", generator_fraction=GENERATOR_FRACTION,
          minutes=None, named=str):
    """Pretrains a `BertPretrainer` (an `ElectraPretrainer` for objective "electra") on the text files `files` to
    `steps` optimizer steps; writes the run folder `out`.

    The corpus streams through `tf.data` in a child process (`process_batches`); `holdout_fraction`
    of its text (by a hash of it) is held out, and scored before and after training. The run is
    backed up every `checkpoint_every` steps (one Keras epoch): after a kill the same call resumes
    at the same step of the schedule, reading the stream past the batches trained (the same pairs,
    order and masks). A rerun with other `settings` than its `settings.json` (but `steps`, which may
    grow, never below the steps trained) is refused before anything is written, unless `restart`
    deletes the run first (`kbert.training.resume_policy`, with `MARKS` and `RENAMED`: a `KeptRunFolder`).
    The folder gets `settings.json`, the tokenizer (`prepare`), the logs,
    `backbone.keras` with the tokenizer (`init` for the task recipes), `curves.png`, the model card
    and `metrics.json`: `run_metrics`'s fields, as every task's, with the held-out scores before
    (`start`) and after (`end`, also `validation`) and `settings`. In a job of several processes
    every process draws the same global batches and trains on its share of each; process 0 alone
    writes and prints.

    Args:
        files: list of paths. The corpus: a sentence or paragraph a line, a blank line between documents.
        out: path of the run folder.
        settings: dict of JSON values. What makes the run what it is (`settings.json`): a rerun that
            differs but in `steps` is refused.
        init: `(backbone, tokenizer)` to continue pretraining from (`load_init`: any family), or None: random
            weights of `config` (a dict of `BertConfig` fields) or else `preset`, of any family (`check_family`
            refuses what cannot work before anything is written).
        vocabulary, vocabulary_sample, vocabulary_size: as `prepare`'s (without `init`): `vocabulary` a vocab.txt or
            a tokenizer folder of any kind (`read_tokenizer`; RoBERTa- and ALBERT-shaped models need one of theirs).
        objective: one of `OBJECTIVES`: "nsp", "sop" or "mlm", what is learned beside masked LM; or "electra",
            replaced-token detection (the saved backbone is the discriminator).
        generator_fraction: float in (0, 1]. With "electra", the generator's width over the backbone's.
        mask_unit, span_p, max_span: what is masked: "token", "whole_word" or "span" (SpanBERT's spans, of lengths
            drawn from `kbert.data.pretraining.masking.span_length_pmf(span_p, max_span)`); checked first.
        span_boundary: bool. With "span", also SpanBERT's span-boundary objective (`BertPretrainer(span_boundary)`).
        duplication_factor: masking (`duplication_factor` > 0: static, that many copies).
        steps, checkpoint_every: optimizer steps of the whole run, a multiple of `checkpoint_every`.
        minutes: float or None. A wall-clock budget for the training steps (the held-out scores and the saving come
            after): the fit stops at the step whose end lands on it (`TimeBudget`, re-planned from the steps' own
            time), at most `steps`, and the learning rate decays to 0 there (warmup: `warmup_ratio` of `steps`).
            Such a run is whole at its end (its backup is deleted: none resumes, none trains further); a rerun of
            one, whole or killed, is refused unless `restart`. `metrics.json` records `time_budget`: the minutes,
            the steps trained, whether the budget stopped them, the re-plans.
        batch_size, sequence_length, learning_rate, warmup_ratio, gradient_accumulation: the optimization.
        holdout_fraction: float. Share of the text held out for evaluation (0: none).
        mixed_precision: True or "bfloat16": compute in bfloat16; "float16": in float16 under loss scaling (GPUs
            without bfloat16); False: float32 (`kbert.optimizers.mixed_compute`). The weights stay float32.
        remat: bool. Blocks recomputed in the backward pass.
        seed: int. Seeds the initial weights and the data stream.
        restart: bool. Start the run over: delete its folder and backup first (refused for a folder of anything else).
        verbose: as `kbert.training.fit_progress`.
        named: how the refusals of `check_family` write a setting's name (an app: its flag).

    Returns: the metrics written to `metrics.json` (None in a process other than process 0).
    """
    folder = pathlib.Path(out)
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, not {objective!r}.")
    shape = init[0].config if init else BertConfig.from_dict(config) if config else PRESETS[preset]
    if objective == "electra":  # a generator wider than the discriminator is refused before anything is written
        generator_dimensions(shape.hidden_dim, generator_fraction)
    check_masking(mask_unit, span_p=span_p, max_span=max_span)
    if span_boundary and mask_unit != "span":
        raise ValueError(f"span_boundary=True predicts spans from their boundaries: give mask_unit='span', not "
                         f"{mask_unit!r}.")
    if span_boundary and objective == "electra":
        raise ValueError("span_boundary=True adds a head to BERT's masked LM, which objective 'electra' does not "
                         "train: drop one.")
    check_mixed_precision(mixed_precision)
    if minutes is not None and not minutes > 0:
        raise ValueError(f"minutes {minutes}: a time budget is a positive number of minutes.")
    if steps % checkpoint_every:
        raise ValueError(f"steps {steps} is not a multiple of checkpoint_every {checkpoint_every} (a run trains whole "
                         "checkpoint intervals).")
    backbone, given = init or (None, None)
    # A prepared folder's run resumes on its own tokenizer, checked as it started, or is refused as another run's
    if restart or not is_prepared(folder):
        given = given or (read_tokenizer(vocabulary) if vocabulary else None)
        check_family(shape, objective, given, sized=not init and "vocabulary_size" in (config or {}), named=named)
    keras.utils.set_random_seed(seed)  # the initial weights (a resumed run then loads its own)
    kept = KeptRunFolder("pretraining run", MARKS, steps, may_change=("steps",), renamed=RENAMED)
    if minutes is not None and not restart and "time_budget" in read_json(folder / METRICS_FILE, missing={}):
        raise ResumeRefusedError(lambda named: f"{folder} holds a whole run under a time budget, which does not train "
                                 f"further: start it over ({named('restart')}) or write another run folder.")
    backup = run_backup(folder, settings, steps_per_epoch=checkpoint_every, restart=restart, kept=kept)  # refuses first
    if minutes is not None and backed_up_step(folder):
        raise ResumeRefusedError(lambda named: f"{folder} holds an interrupted run under a time budget of {minutes} "
                                 f"minutes, which does not resume (the budget is of one uninterrupted fit): start it "
                                 f"over ({named('restart')}).")
    # process 0 writes the tokenizer; a job's others then read it
    tokenizer = chief_first(lambda: prepare(folder, given, None, vocabulary_sample, vocabulary_size),
                            lambda: load_hf_tokenizer(folder))
    with mixed_compute(mixed_precision), rematerialized(remat):  # the model alone: its saved copy loads as float32
        if backbone is None:
            backbone = BertBackbone(**{**shape.to_dict(), "vocabulary_size": tokenizer.vocabulary_size})
        if objective == "electra":
            model = ElectraPretrainer(backbone, generator_fraction=generator_fraction, seed=seed)
        else:
            model = BertPretrainer(backbone, next_sentence=objective != "mlm", span_boundary=span_boundary)
    epochs = steps // checkpoint_every
    # Under a time budget the schedule is laid by fit over `steps`, then by the TimeBudget over the steps that fit
    budget = [] if minutes is None else [TimeBudget(float("inf"), steps)]  # the deadline is set as the fit starts
    model.compile(optimizer=bert_adamw(learning_rate, None if budget else max(steps, 1), warmup_ratio,
                                       gradient_accumulation_steps=gradient_accumulation))

    data_options = dict(tokenizer=tokenizer, batch_size=batch_size, max_seq_length=sequence_length,
                        objective="mlm" if objective == "electra" else objective, mask_unit=mask_unit,
                        span_p=span_p, max_span=max_span, span_boundaries=span_boundary, holdout=holdout_fraction)
    masking = dict(masking="static", duplication_factor=duplication_factor) if duplication_factor else {}
    # The tf.data pipeline runs in a child process (see process_batches: in this one it would slow torch's steps about
    # 2x). A resumed run reads the stream of the run it resumes (same seed) past the batches trained already: the same
    # pairs, order and masks as if it had never stopped. The same child makes the held-out batches first, once, and
    # they are kept. The child loads TensorFlow: its start-up lines are dropped too, unless kbert shows them
    # (`KBERT_VERBOSE`).
    quiet = None if start_up_verbose() else lambda line: not START_UP_LINE.match(line)
    trained_batches = backed_up_step(folder) * gradient_accumulation
    if trained_batches:
        print(f"Resuming after {trained_batches} batches: reading the data stream past them (same order and "
              "masks as an uninterrupted run).", flush=True)
    held_out_options = dict(held_out=True, masking="static", duplication_factor=1, repeat=False, shuffle_buffer=0,
                            seed=1, **data_options) if holdout_fraction else None
    data = process_batches(held_out_then_training, files, held_out_options, seed=seed,
                           skip_batches=trained_batches, stderr_filter=quiet, **data_options, **masking)
    held_out = holdout_fraction and _kept_batches(next(data))

    def evaluate(when):  # every process (across JAX processes a collective step, each on its share of each batch)
        scores = model.evaluate(process_share(held_out), return_dict=True, verbose=0)
        print(f"held-out {when} training:", json.dumps(scores), flush=True)
        return scores

    held_out_scores = {key: value for key, value in read_json(folder / METRICS_FILE, missing={}).items()
                       if key == "start"}  # measured once, before the first step
    if held_out and not held_out_scores and backup.last_checkpoint() is None:
        held_out_scores["start"] = evaluate("before")
        if is_chief():
            write_json_atomic(folder / METRICS_FILE, held_out_scores)

    def fit(callbacks, verbose):
        with contextlib.closing(data):
            if not epochs:  # steps 0 makes the vocabulary and the initial backbone: no batch is drawn, no child started
                return keras.callbacks.History()
            mine = shares(data) if torch_data_parallel.active() else process_share(data)
            for each in budget:
                each.deadline = each.clock() + 60 * minutes
            # shuffle=False: the pipeline shuffles (Keras would warn that it ignores shuffle=True).
            return model.fit(mine, epochs=epochs, steps_per_epoch=checkpoint_every * gradient_accumulation,
                             callbacks=callbacks,
                             validation_data=process_share(held_out) if held_out else None,
                             shuffle=False, verbose=verbose)

    def scores(history):
        if held_out:
            held_out_scores["end"] = evaluate("after")
        return held_out_scores.get("end", {}), epochs  # the weights of the last epoch

    def write(metrics, history):
        metrics.update(held_out_scores, settings=settings)  # pretraining's own fields, beside every run's
        if budget:
            metrics["time_budget"] = {"minutes": minutes, "steps": budget[0].steps,
                                      "stopped_by_budget": budget[0].steps < steps, "plans": budget[0].plans}
        if not is_chief():  # process 0 saves and reports the weights every process holds
            return
        (folder / CHECKSUMS_FILE).unlink(missing_ok=True)  # a kill before the new record leaves none: nothing checked
        if history.history:
            plot_history(history.history, folder / "curves.png",
                         title=f"{folder.name}: one epoch = {checkpoint_every} steps of {batch_size}")
        with tempfile.TemporaryDirectory(dir=folder) as temporary, writing_alone():  # a kill never leaves half a file
            save_backbone(temporary, backbone, tokenizer)
            os.replace(pathlib.Path(temporary) / BACKBONE_FILE, folder / BACKBONE_FILE)
            if writes_masked_lm(model):
                save_hf(model, pathlib.Path(temporary) / MASKED_LM_FOLDER, tokenizer)
                shutil.rmtree(folder / MASKED_LM_FOLDER, ignore_errors=True)
                os.replace(pathlib.Path(temporary) / MASKED_LM_FOLDER, folder / MASKED_LM_FOLDER)
        write_json_atomic(folder / METRICS_FILE, metrics)
        write_model_card(folder, f"{folder.name}: {backbone.family} pretrained from scratch",
                         {"corpus": files, "vocab": vocabulary},
                         {k: v for k, v in settings.items() if k != "corpus"},
                         {k: v for k, v in metrics.items() if k not in ("settings", "hyperparameters", "history")})
        record_checksums(folder)  # loading checks the backbone and vocabulary against it (`kbert.saving.checksums`)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> (20 if sys.platform == "darwin" else 10)  # MB
        saved = [folder / BACKBONE_FILE, *([folder / MASKED_LM_FOLDER] if writes_masked_lm(model) else [])]
        print(f"Saved {' and '.join(map(str, saved))}; peak memory of this process: {peak} MB", flush=True)

    run = {"corpus": [str(path) for path in files], "vocabulary": vocabulary and str(vocabulary),
           "config": backbone.config.to_dict()}
    hyperparameters = {"steps": steps, "checkpoint_every": checkpoint_every, "batch_size": batch_size,
                       "sequence_length": sequence_length, "learning_rate": learning_rate, "warmup_ratio": warmup_ratio,
                       "objective": objective, "mask_unit": mask_unit,
                       **({"span_p": span_p, "max_span": max_span, "span_boundary": span_boundary}
                          if mask_unit == "span" else {}),
                       "duplication_factor": duplication_factor, "holdout_fraction": holdout_fraction,
                       "mixed_precision": mixed_precision, "gradient_accumulation": gradient_accumulation,
                       "remat": remat, "seed": seed, **({"minutes": minutes} if budget else {})}
    if objective == "electra":
        hyperparameters["generator_fraction"] = generator_fraction
    metrics = training_run(model, "pretrain", run, hyperparameters, backup, fit, scores, write,
                           callbacks=budget, logs=contextlib.nullcontext(training_logs(folder)), title="pretrain",
                           verbose=verbose, keep_backup=not budget)
    return metrics if is_chief() else None


def _kept_batches(batches):
    """The list `batches` (the held-out global batches) as a `keras.utils.PyDataset`: `fit`'s validation and
    `evaluate` read it as it is, batch by batch, and a job of several JAX processes shares it out (`process_share`)."""

    class Kept(keras.utils.PyDataset):
        def __len__(self):
            return len(batches)

        def __getitem__(self, index):
            return batches[index]

    return Kept()

"""Fine-tune, evaluate and run extractive question answerers (SQuAD v1.1, and 2.0's unanswerable questions): the
library side of apps/qa.py, over `kbert.BertQuestionAnswerer` (its preset, preprocessor, compile and fit).

Contexts longer than a window are read through overlapping windows (`max_length` 384,
`doc_stride` 128: BERT's recipe, see `kbert.data.windows.squad.SquadWindows`); answers are
decoded over all windows of a question and sliced from the original context. Scores are
the official v1.1 exact match and F1 (%), or 2.0's where questions have no answers, computed
by `evaluate_examples` on the model's outputs decoded as `BertQuestionAnswerer.predict` decodes them (the
outputs of the Keras model, or of the model exported to token_ids.tflite: `kbert_edge.EdgeModel`).
"""

import json
import pathlib

import dataclasses
import numpy as np

from kbert.data.readers.squad import read_squad
from kbert.data.readers.squad_example import SquadExample
from kbert.data.readers.tables import Layout
from kbert.data.windows.squad import SquadWindows
from kbert.metrics.squad import (best_no_answer_threshold, squad_scores, squad_v2_question_scores,
                                 squad_v2_scores)
from kbert.models.compute_dtype import with_compute_dtype
from kbert.saving import METRICS_FILE, load_run, write_json_atomic
from kbert.tasks.bert_question_answerer import BertQuestionAnswerer
from kbert.tasks.bert_question_answerer_preprocessor import BertQuestionAnswererPreprocessor
from kbert.tasks.task_data import prepared_outputs
from kbert.training.fine_tuning import FineTuning
from kbert.training.training_run import fine_tuning_run
from kbert.training.results import write_evaluation
from kbert_core.answers import MAX_ANSWER_LENGTH, N_BEST, NO_ANSWER_NOTE, says_no_answer
from kbert_core.windows import MAX_QUESTION_LENGTH, QA_DOC_STRIDE, QA_SEQUENCE_LENGTH


QA_TRAINING = FineTuning(epochs=2)  # BERT's SQuAD recipe: 2 epochs (the other settings as every fine-tuning's)


def train(data, init, out, max_length=QA_SEQUENCE_LENGTH, doc_stride=QA_DOC_STRIDE,
          max_question_length=MAX_QUESTION_LENGTH, validation_articles=10, articles=None, limit=None,
          validation_limit=None, layout=None, allow_no_answer=False, no_answer_threshold=0.0, **training):
    """Fine-tunes a `BertQuestionAnswerer` and writes the run folder `out`.

    The task API's recipe (`BertQuestionAnswerer.from_preset` with a
    `BertQuestionAnswererPreprocessor` of these windowing settings, compiled by `FineTuning.task_model`:
    `bert_adamw`, 10% warmup, linear decay over the steps of `fit`), fitted on the questions,
    contexts and answers. Questions whose answer was not located in its context (by the
    reader, or on no context token) are skipped and counted (`train_skipped`), and so are
    questions without answers (SQuAD 2.0's unanswerable ones, `train_unanswerable`) unless
    `allow_no_answer`, where they train on [CLS] and the model may answer "". A seeded
    choice of `validation_articles` whole articles is held out for validation (questions on
    one paragraph never straddle the split). The folder gets `model.keras` (with its
    preprocessor), the tokenizer, `metrics.json` (with the windowing settings), `curves.png`,
    the model card `README.md`, `history.csv`, TensorBoard `logs/` and the validation
    predictions, all at once at the end. The run is backed up beside `out` at each epoch's
    end and every `backup_minutes` within one: the same call after a kill resumes from the last
    backup, on the batches the uninterrupted run had (`run_backup`, `resumable_fit`); a loss
    that goes NaN or infinite raises `kbert.training.NonFiniteLossError`, keeping the last
    good backup.

    Args:
        data: path of a SQuAD v1.1 JSON file, or a table of a question a row (`kbert.data.readers.squad.read_squad`).
        layout: `kbert.data.readers.tables.Layout` or None. How `data` is laid out: format and columns (default: SQuAD
            JSON, or a table by its suffix with Hugging Face's squad columns).
        init: str. The preset of `BertQuestionAnswerer.from_preset`: a preset name,
            "all_minilm_l6_v2" or a folder (a QA run folder comes back with its head).
        out: path of the run folder to write.
        max_length, doc_stride, max_question_length: int. The windowing (see `SquadWindows`);
            `max_length` at most the backbone's positions.
        validation_articles: int. Articles held out for validation.
        articles: int or None. Read only the first `articles` articles of `data`.
        limit: int or None. Train on a seeded subset of this many questions.
        validation_limit: int or None. Score a seeded subset of this many validation questions.
        allow_no_answer, no_answer_threshold: `BertQuestionAnswerer`'s: train on unanswerable questions and answer
            "" where the no-answer score beats the best span's by more than the threshold.
        **training: the `kbert.training.fine_tuning.FineTuning` settings, as for `kbert.recipes.sentence.train`
            (default: `QA_TRAINING`, 2 epochs).

    Returns: the metrics dict written to `metrics.json`.
    """
    training = dataclasses.replace(QA_TRAINING, **training)
    examples = read_squad(data, articles=slice(0, articles) if articles else None, layout=layout)
    report = dict(read_squad.last_report)
    train_examples, valid_examples, held_out = split_articles(examples, validation_articles, training.seed, limit,
                                                              validation_limit, source=data)
    model = training.task_model(BertQuestionAnswerer, init, sequence_length=max_length,
                                allow_no_answer=allow_no_answer, no_answer_threshold=no_answer_threshold)
    max_length = min(max_length, model.backbone.max_sequence_length)
    tokenizer = model.preprocessor.tokenizer
    model.preprocessor = BertQuestionAnswererPreprocessor(tokenizer, max_length, doc_stride, max_question_length)
    windowing = {"max_length": max_length, "doc_stride": doc_stride, "max_question_length": max_question_length}
    located, train_windows = _located_answers(train_examples, tokenizer, windowing, allow_no_answer)
    unanswerable = sum(not e.answers for e in train_examples)
    skipped = len(train_examples) - len(located)
    train_articles = len({e.title for e in examples}) - validation_articles
    print(f"qa: {len(train_examples)} training questions ({train_windows} windows, {skipped} skipped: answer not in "
          f"context{_unanswerable_note(unanswerable, allow_no_answer)}) from {train_articles} articles; "
          f"{len(valid_examples)} validation questions from {validation_articles} articles.")
    questions, contexts = [e.question for e in located], [e.context for e in located]
    answers = [{"text": e.answers[0], "answer_start": e.answer_start} if e.answers else "" for e in located]
    run = {"task": "qa", "init": str(init), "data": str(data), "valid": _held_out_description(held_out, training.seed),
           "train_questions": len(train_examples), "train_windows": train_windows,
           "train_skipped": skipped, "train_unanswerable": unanswerable, "validation_questions": len(valid_examples),
           "reader": report, "allow_no_answer": allow_no_answer, "no_answer_threshold": no_answer_threshold,
           **windowing, **(layout.settings() if layout else {})}
    metrics, validation = fine_tuning_run(
        model, (questions, contexts), answers, out, training, "qa", run, inputs=(data,), title=f"qa from {init}",
        data={"train and validation": data},
        hyperparameters={"articles": articles, "limit": limit, "validation_limit": validation_limit,
                         "validation_articles": validation_articles, "allow_no_answer": allow_no_answer},
        final_scores=lambda model: _validation(model, valid_examples, training.batch_size))
    print(f"validation ({len(valid_examples)} questions): {_scores_line(validation)}")
    return metrics


def _unanswerable_note(unanswerable, allow_no_answer):
    """What the training line says of the questions without answers."""
    if not unanswerable:
        return ""
    if allow_no_answer:
        return f"; {unanswerable} without an answer, trained on [CLS]"
    return f", of which {unanswerable} have no answer: allow_no_answer trains on them"


def _scores_line(scores):
    """Exact match and F1, and for SQuAD 2.0 scores, those with and without answers."""
    line = f"exact match {scores['exact_match']:.2f}, F1 {scores['f1']:.2f}"
    if scores.get("NoAns_total"):
        line += (f" (with answers: F1 {scores.get('HasAns_f1', 0.0):.2f} on {scores['HasAns_total']}; "
                 f"without: exact {scores['NoAns_exact']:.2f} on {scores['NoAns_total']})")
    if "best_threshold" in scores:
        line += (f"; F1 {scores['best_threshold_f1']:.2f} at the best no-answer threshold, "
                 f"{scores['best_threshold']:.3f}")
    return line


def _validation(model, examples, batch_size):
    """The validation scores after the last epoch, and the predictions as a file of the run folder."""
    scores, predictions = evaluate_examples(model, examples, batch_size)
    return scores, {"validation_predictions.json": predictions}


def _located_answers(examples, tokenizer, windowing, unanswerable=False):
    """`(examples, windows)`: the examples whose answer covers a context token (and, with `unanswerable`, those
    without answers), and their window count.

    The others (no `answer_start` from the reader, or an answer on no token) are those
    `SquadWindows` skips in training, which `BertQuestionAnswerer.fit` would reject.
    """
    windows = SquadWindows(tokenizer, examples, **windowing, training=True, unanswerable=unanswerable)
    return [examples[i] for i in np.unique(windows.window_examples)], len(windows)


def split_articles(examples, validation_articles, seed=0, limit=None, validation_limit=None, source=""):
    """`(train, validation, held-out titles)`: a seeded choice of whole articles held out, as `train` does.

    Then seeded subsets, in file order: `limit` training and `validation_limit` validation
    questions (None: all).

    Args:
        examples: list of `SquadExample` (`read_squad`).
        validation_articles: int. Articles held out.
        seed: int. Seeds the choice of articles, then the subsets.
        limit, validation_limit: int or None.
        source: str. Where the examples come from, for messages.

    Example:
    >>> examples = [SquadExample(f"q{i}", "Who?", "Ann.", title=f"t{i % 3}") for i in range(6)]
    >>> train, valid, held_out = split_articles(examples, 1, seed=0)
    >>> len(train), len(valid), held_out == sorted({e.title for e in valid})
    (4, 2, True)
    """
    titles = list(dict.fromkeys(example.title for example in examples))
    if not 0 < validation_articles < len(titles):
        raise ValueError(f"{source}: {len(titles)} articles; cannot hold out {validation_articles}.")
    rng = np.random.default_rng(seed)
    held_out = {titles[i] for i in rng.permutation(len(titles))[:validation_articles]}
    train_examples = [e for e in examples if e.title not in held_out]
    valid_examples = [e for e in examples if e.title in held_out]
    if limit:
        train_examples = [train_examples[i] for i in np.sort(rng.permutation(len(train_examples))[:limit])]
    if validation_limit:
        valid_examples = [valid_examples[i] for i in np.sort(rng.permutation(len(valid_examples))[:validation_limit])]
    return train_examples, valid_examples, sorted(held_out)


def _held_out_description(held_out, seed):
    return f"{len(held_out)} held-out articles (seed {seed}): {held_out}"


def run_split(model_dir, data=None):
    """`(train, validation)` questions of the run folder `model_dir`, carved again as `train` did.

    Reads the run's SQuAD file (`data`, default: the one in its `metrics.json`) with the
    recorded seed, article count and limits. The validation subset is redrawn with its
    recorded size (drawing all of a set keeps it whole, so this holds whether or not
    `validation_limit` was set). Raises ValueError when the split does not give back the
    recorded held-out articles and question count (another file, or another version of it).
    """
    metrics = json.loads((pathlib.Path(model_dir) / METRICS_FILE).read_text())
    settings = metrics["hyperparameters"]
    data = data or metrics["data"]
    articles = settings.get("articles")
    examples = read_squad(data, articles=slice(0, articles) if articles else None, layout=Layout.from_settings(metrics))
    train_examples, valid_examples, held_out = split_articles(
        examples, settings["validation_articles"], settings["seed"], settings.get("limit"),
        metrics["validation_questions"], source=data)
    if (_held_out_description(held_out, settings["seed"]) != metrics["valid"]
            or len(valid_examples) != metrics["validation_questions"]):
        raise ValueError(f"{data} does not give back the validation split of {model_dir} "
                         f"({metrics['validation_questions']} questions from {metrics['valid']}).")
    return train_examples, valid_examples


def evaluate(model_dir, data, out=None, batch_size=64, layout=None, verbose="auto", no_answer_threshold=None):
    """Exact match and F1 of the run folder `model_dir` on the SQuAD file `data` (or a table laid out as
    `layout` says, as `train`'s). `verbose`: the progress of the pass (`PaddedBatches.predict`).
    `no_answer_threshold`: decode with this one (`with_no_answer_threshold`), recorded in the metrics.

    Writes the metrics to `out` (default `MODEL_DIR/eval_<data name>.json`) and the
    predictions ({id: answer}, the official format) beside it, as `predictions_<name>`.

    Returns: dict of metrics.
    """
    model = with_no_answer_threshold(load_run(model_dir), no_answer_threshold)
    examples = read_squad(data, layout=layout)
    scores, predictions = evaluate_examples(model, examples, batch_size, verbose=verbose)
    if no_answer_threshold is not None:
        scores["no_answer_threshold"] = no_answer_threshold
    summary = f"{data} ({len(examples)} questions): {_scores_line(scores)}"
    metrics, out = write_evaluation(model_dir, data, scores, out, summary, reader=read_squad.last_report)
    write_json_atomic(out.with_name(f"predictions_{out.name}"), predictions)
    return metrics


def evaluate_examples(model, examples, batch_size=64, verbose=0, runner=None):
    """(metrics, predictions): SQuAD scores of the answers `model.predict` gives `examples`, and {id: answer text};
    `runner` computes the model's outputs instead (as `BertTask.predict_with`: an `EdgeModel`). Where some questions
    have no answers (SQuAD 2.0), the 2.0 scores of all, and for a model that allows no answer the threshold that
    would score best (`best_threshold`, with its `best_threshold_f1` and `best_threshold_exact_match`); else the v1.1
    scores."""
    prepared = model.preprocessor.prepare(([e.question for e in examples], [e.context for e in examples]))
    ranked = model.ranked_answers(prepared_outputs(model, runner or model, prepared, batch_size, verbose), prepared)
    predictions = {e.id: answer["text"] for e, answer in zip(examples, model.best_answers(ranked))}
    gold = {e.id: e.answers for e in examples}
    if all(gold.values()):
        return squad_scores(predictions, gold), predictions
    scores = squad_v2_scores(predictions, gold)
    if model.allow_no_answer:
        scores.update(_best_threshold(ranked, examples))
    return scores, predictions


def _best_threshold(ranked, examples):
    """The no-answer threshold that maximises SQuAD 2.0 F1 on `examples` (`best_no_answer_threshold`), its F1 and
    its exact match, from the answers a model that allows no answer ranks for them (`ranked_answers`)."""
    margins, span_scores, null_scores = [], [], []  # scores: (exact, F1) of each question
    for example, answers in zip(examples, ranked):
        null = next(a["score"] for a in answers if says_no_answer(a))
        span = next((a for a in answers if not says_no_answer(a)), {"text": "", "score": null - 1.0})  # none: ""
        margins.append(null - span["score"])
        span_scores.append(squad_v2_question_scores(span["text"], example.answers))
        null_scores.append(squad_v2_question_scores("", example.answers))
    (span_exact, span_f1), (null_exact, null_f1) = zip(*span_scores), zip(*null_scores)
    threshold, best_f1 = best_no_answer_threshold(margins, span_f1, null_f1)
    best_exact = np.mean([n if m > threshold else s for m, s, n in zip(margins, span_exact, null_exact)])
    return {"best_threshold": threshold, "best_threshold_f1": 100.0 * best_f1,
            "best_threshold_exact_match": 100.0 * float(best_exact)}


def predict(model_dir, context, questions, n_best=N_BEST, max_answer_length=MAX_ANSWER_LENGTH, batch_size=32,
            dtype="float32", no_answer_threshold=None):
    """The best answer to each question about `context`: text, char span, score, probability.

    `context` is one text for all the questions, or a list of texts, one per question.
    `BertQuestionAnswerer.predict` of the run's model, pairing `n_best` start and end candidates per
    window, answers at most `max_answer_length` tokens long; `dtype`: "float32", or "bfloat16"
    (`kbert.models.compute_dtype`). `no_answer_threshold`: decode with this one (`with_no_answer_threshold`).

    Returns: list of dicts `{"question", "text", "start", "end", "score", "probability",
    "alternatives"}` (`{"question", "text": "", "note", "alternatives"}` when no span fits).
    Raises ValueError for an empty context or question.
    """
    contexts = [context] * len(questions) if isinstance(context, str) else list(context)
    for i, (question, context) in enumerate(zip(questions, contexts, strict=True)):
        if not context.strip():
            raise ValueError(f"The context{f' of question {i + 1}' if len(set(contexts)) > 1 else ''} is empty: "
                             f"nothing to answer from.")
        if not question.strip():
            raise ValueError(f"Question {i + 1} is empty.")
    model = with_no_answer_threshold(load_run(model_dir), no_answer_threshold)
    model.set_decoding(n_best=n_best, max_answer_length=max_answer_length)  # this call's, on a model loaded for it
    return answers(model, questions, contexts, batch_size, dtype)


def with_no_answer_threshold(model, threshold):
    """`model` (a `BertQuestionAnswerer`) answering "no answer" where its no-answer score beats the best span's by more
    than `threshold`, or as it was where `threshold` is None.

    A model trained without `allow_no_answer` takes it too: BERT trains [CLS] as the answer of every window that
    lacks it, so its no-answer score means something (on SQuAD 2.0's task, F1 44.12 answering always, 72.32 at the
    best threshold: docs/results.md#unanswerable-questions).
    """
    if threshold is not None:
        model.set_decoding(allow_no_answer=True, no_answer_threshold=threshold)
    return model


def answers(model, questions, contexts, batch_size=32, dtype="float32"):
    """The best answer to each question about its context, from a loaded `BertQuestionAnswerer`: `predict`'s dicts
    with the question (and a `note` where the answer is "no answer": text "", start 0), or `{"question", "text": "",
    "note", "alternatives"}` where no span fits."""
    found = model.predict_with(with_compute_dtype(model, dtype), (list(questions), list(contexts)), batch_size)
    return [{"question": q, **_with_note(answer)} for q, answer in zip(questions, found)]


def _with_note(answer):
    if answer["start"] < 0:
        return {"text": "", "note": "no answer span found", "alternatives": answer["alternatives"]}
    if says_no_answer(answer):
        return {**answer, "note": NO_ANSWER_NOTE}
    return answer

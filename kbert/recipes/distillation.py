"""Distil a fine-tuned sentence classifier (sentiment, NLI, similarity, multi-label: `kbert.recipes.sentence`'s) into
a smaller student, an ordinary run folder of the same task: the library side of apps/distill.py."""

import pathlib

from kbert.data import DataFormatError
from kbert.data.readers.text_file import open_text, utf8_error
from kbert.recipes import sentence
from kbert.saving import load_run, model_source
from kbert.tasks import BertClassifier
from kbert.training.distillation import Distillation

PROBLEMS = {problem.name: problem for problem in (sentence.SENTIMENT, sentence.NLI, sentence.SIMILARITY,
                                                  sentence.MULTI_LABEL)}


def train(teacher, data, student, out, temperature=None, alpha=0.5, unlabeled=None, unlabeled_lines=None,
          problem=None, **options):
    """Distils the classifier of the run folder `teacher` into `student` on the training file `data` and writes the
    run folder `out`: `kbert.recipes.sentence.train` with a `Distillation`.

    The student learns the teacher's outputs on `data`'s texts (and on `unlabeled` texts, which the teacher labels)
    at `temperature`, and `data`'s labels, weighted `alpha` and 1 - alpha (`kbert.tasks.distillation_loss`); it is
    validated, early-stopped, backed up and resumed after a kill as any fine-tuning (a changed teacher or unlabeled
    file refuses the resume, as a changed training file does, before the teacher runs), and its run folder is of
    the teacher's task (`metrics.json` records the teacher, temperature and alpha): the sentence apps evaluate and
    predict with it, apps/export.py exports it.

    Args:
        teacher: path of a run folder of a sentence problem (or a `.keras` file of a `BertClassifier`, with `problem`).
        data: path of the training file, laid out as the teacher's task reads it (`sentence.train`'s).
        student: what `kbert.training.distillation.student_classifier` builds the student from: "every-K" (the
            teacher's own layers, every K-th), a preset name, a `BertConfig`, a dict or JSON file of its fields, or
            a model source.
        out: path of the run folder to write.
        temperature: float above 0, or None (2 for classes, 1 for a regressor's scores).
        alpha: float in [0, 1]. The weight of the teacher's outputs; the labels' is 1 - alpha.
        unlabeled: path of a UTF-8 text file of more texts, one a line (text<TAB>pair for pairs), or None.
        unlabeled_lines: int or None. Read the first this many texts of `unlabeled` only.
        problem: `SentenceProblem` or None (the teacher's, as its `metrics.json` records it). Another than the
            teacher's is refused.
        **options: `sentence.train`'s other settings (valid, max_length, limit, patience, layout, the
            `FineTuning` settings, ...); not `labels` (the teacher's classes) nor `init` (`student`).

    Returns: the metrics dict written to `metrics.json`.
    """
    problem, model, model_file = read_teacher(teacher, problem)
    texts = None if unlabeled is None else read_unlabeled(unlabeled, problem.num_texts, unlabeled_lines)
    verbose = options.get("verbose", "auto")
    distillation = Distillation(model, temperature, alpha, texts, source=str(teacher), files=(model_file, unlabeled),
                                verbose={2: "lines"}.get(verbose, verbose))
    return sentence.train(problem, data, student, out, labels=model.label_names, distillation=distillation, **options)


def read_teacher(teacher, problem=None):
    """`(problem, model, model file)` of the teacher `teacher`: its `SentenceProblem` (the task its `metrics.json`
    records; `problem` must be it), its `BertClassifier` and the file it was loaded from. A ValueError says why
    another is no teacher of these problems (a run of another task, a pretraining run, a model of another kind).

    Example:
    >>> read_teacher("bert_tiny")
    Traceback (most recent call last):
    ValueError: The teacher bert_tiny is a preset (random weights): a teacher is the run folder of a fine-tuned \
sentence classifier (sentiment, nli, similarity, multi_label).
    """
    source = model_source(teacher)
    kinds = {"preset": "a preset (random weights)", "pretrained": "a pretrained encoder, not fine-tuned",
             "hugging_face": "a Hugging Face checkpoint", "backbone_folder": "a pretraining run (a backbone)"}
    if source.kind in kinds:
        raise ValueError(f"The teacher {teacher} is {kinds[source.kind]}: a teacher is the run folder of a fine-tuned "
                         f"sentence classifier ({', '.join(PROBLEMS)}).")
    recorded = source.metrics.get("task")
    if recorded is not None and recorded not in PROBLEMS:
        raise ValueError(f"The teacher {teacher} is a {recorded} run: distillation teaches from sentence classifiers "
                         f"({', '.join(PROBLEMS)}).")
    if problem is not None and recorded not in (None, problem.name):
        raise ValueError(f"The teacher {teacher} is a {recorded} run, not a {problem.name} one: distil it as "
                         f"{recorded}.")
    if problem is None and recorded is None:
        raise ValueError(f"The teacher {teacher} records no task (no metrics.json): name its problem (one of "
                         f"{', '.join(PROBLEMS)}).")
    problem = problem or PROBLEMS[recorded]
    model = load_run(source)
    if not isinstance(model, BertClassifier) or model.regression != problem.regression or (
            model.multi_label != problem.multi_label):
        raise ValueError(f"The teacher {teacher} holds a {type(model).__name__}"
                         f"{'' if not isinstance(model, BertClassifier) else _kind_of(model)}, not the classifier "
                         f"of a {problem.name} run.")
    return problem, model, source.keras_file


def read_unlabeled(path, num_texts=1, limit=None):
    """The texts of the UTF-8 file `path`, one a line (blank lines passed over): a list, or for `num_texts` 2 a tuple
    `(texts, pairs)` of `text<TAB>pair` lines; the first `limit` only. A line that is not UTF-8, or a line of pairs
    without exactly one tab, raises `kbert.data.DataFormatError` naming it.

    Example:
    >>> import tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "unsup.txt"
    >>> _ = path.write_text("A film.\\n\\nAnother one.\\nA third.\\n")
    >>> read_unlabeled(path, limit=2)
    ['A film.', 'Another one.']
    >>> read_unlabeled(path, num_texts=2)
    Traceback (most recent call last):
    ...
    kbert.data.readers.text_file.DataFormatError: .../unsup.txt:1: expected text<TAB>pair, found 1 column(s).
    """
    rows = []
    with open_text(path) as file:
        for number, line in enumerate(file, start=1):
            if limit is not None and len(rows) == limit:
                break
            line = line.rstrip("\n")
            problem = utf8_error(line)
            if problem:
                raise DataFormatError(f"{path}:{number}: {problem}")
            if not line.strip():
                continue
            fields = line.split("\t")
            if num_texts == 2 and len(fields) != 2:
                raise DataFormatError(f"{path}:{number}: expected text<TAB>pair, found {len(fields)} column(s).")
            rows.append(line if num_texts == 1 else tuple(fields))
    if not rows:
        raise DataFormatError(f"{path}: no texts (a text a line).")
    if num_texts == 1:
        return rows
    return [text for text, _ in rows], [pair for _, pair in rows]


def _kind_of(model):
    """What a classifier predicts, in words."""
    return " of scores" if model.regression else " of several classes a text" if model.multi_label else " of classes"

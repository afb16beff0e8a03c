"""Distillation: a fine-tuned teacher `BertClassifier` teaches a smaller student, an ordinary `BertClassifier`, on its
outputs softened by a temperature and on the labels where there are any (`kbert.tasks.distillation_loss`), over the
task's data and texts the teacher labels. `Distillation` is how a recipe's fine-tuning becomes a distillation (its
student, its targets, its settings); `student_classifier` builds the students: a preset, a config, the teacher's own
layers (`every-K`), or any model source."""

import dataclasses
import hashlib
import json
import pathlib
import re

import numpy as np

from kbert.config import DEFAULT_SEQUENCE_LENGTH, PRESETS, BertConfig
from kbert.distribution import is_chief
from kbert.models import BertBackbone
from kbert.models.kept_layers import every_kth_layer, with_layers
from kbert.saving import atomic_file, check_vocabulary, model_source
from kbert.tasks import BertClassifier, BertTextClassifierPreprocessor
from kbert.tasks.distillation_loss import DistillationLoss, check_settings
from kbert.tasks.table_inputs import raw_inputs
from kbert.training.atomic_backup_and_restore import UNREADABLE
from kbert_core.classification import is_blank

EVERY = re.compile(r"every-([0-9]+)")  # a student of the teacher's own layers, every K-th: "every-2"
DEFAULT_TEMPERATURE = 2.0  # DistilBERT's; a regressor's scores take none (1)
# The teacher's outputs a run keeps (float32, with the SHA-256s they are of), to read back when it resumes.
TEACHER_OUTPUTS_FILE = "teacher_outputs.npz"


@dataclasses.dataclass(frozen=True, eq=False)
class Distillation:
    """How a fine-tuning recipe distils `teacher` into its student instead of fine-tuning on the labels alone
    (`kbert.recipes.sentence.train`'s `distillation`): the student's loss is `DistillationLoss`, on the teacher's
    outputs over the training inputs and over `unlabeled` texts (computed once, before training, in inference mode,
    and kept for a resume: `targets`), and on the training labels.

    Args:
        teacher: the fine-tuned `BertClassifier` (with its preprocessor).
        temperature: float above 0, or None: `DEFAULT_TEMPERATURE` for classes, 1 for a regressor (whose scores
            no temperature softens; another is refused).
        alpha: float in [0, 1]. The weight of the teacher's outputs; the labels' is 1 - alpha.
        unlabeled: None, or more raw inputs without labels, as the training inputs (a list of texts, or a tuple
            `(texts, pairs)`), which the teacher labels. Those with no tokens are left out.
        source: str or None. Where the teacher was read (its run folder), recorded in the run's settings.
        files: paths of the files the distillation reads (the teacher's model, the unlabeled texts), whose change
            since a backup refuses a resume, as a training file's does (`fine_tuning_run`'s `inputs`).
        verbose: the progress of the teacher's pass, as `PaddedBatches.predict`'s.

    Example:
    >>> from kbert.training.fine_tuning import FineTuning
    >>> reader = BertClassifier.from_preset("bert_tiny", num_classes=2).preprocessor
    >>> teacher = BertClassifier(BertBackbone.from_preset("bert_tiny", num_layers=4), 2, preprocessor=reader)
    >>> distillation = Distillation(teacher, temperature=2.0, alpha=0.5, unlabeled=["more text", "  "], verbose=0)
    >>> student = distillation.student(FineTuning(seed=1), "every-2", num_classes=2)
    >>> x, y = distillation.targets(student, ["a gripping film", "dull"], [1, 0])
    1 of the 2 unlabeled texts have no tokens: left out.
    The teacher labels the 2 training examples and 1 unlabeled text(s).
    >>> student.backbone.num_layers, x, y.tolist(), student.loss.labelled
    (2, ['a gripping film', 'dull', 'more text'], [0, 1, 2], 2)
    """

    teacher: BertClassifier
    temperature: float = None
    alpha: float = 0.5
    unlabeled: object = None
    source: str = None
    files: tuple = ()
    verbose: object = "auto"

    def __post_init__(self):
        if not isinstance(self.teacher, BertClassifier):
            raise ValueError(f"A teacher is a fine-tuned BertClassifier, not a {type(self.teacher).__name__}: "
                             "distillation teaches classifiers' and regressors' outputs.")
        if self.temperature is None:
            object.__setattr__(self, "temperature", 1.0 if self.teacher.regression else DEFAULT_TEMPERATURE)
        check_settings(self.temperature, self.alpha)
        if self.teacher.regression and self.temperature != 1:
            raise ValueError(f"The teacher is a regressor, whose scores no temperature softens: its score is the "
                             f"student's soft target (squared error); leave the temperature at 1, not "
                             f"{self.temperature}.")

    @property
    def kind(self):
        """What the teacher's outputs are: a `DistillationLoss` kind."""
        return "regression" if self.teacher.regression else "multi_label" if self.teacher.multi_label else "classes"

    @property
    def teacher_needed(self):
        """Whether the teacher's outputs weigh anything in the loss: not at alpha 0, the labels' loss alone."""
        return self.alpha > 0

    def student(self, training, init, **arguments):
        """The student, compiled as `training` (a `FineTuning`) compiles a task model (`FineTuning.built`):
        `student_classifier(teacher, init, **arguments)`. The classes `arguments` ask for (`num_classes`,
        `label_names`, `multi_label`) must be the teacher's; a `class_weight` is refused (as the student's `fit`
        refuses it: `BertClassifier.weighed_classes`), here before the run's folders are made or the teacher runs."""
        if training.class_weight is not None:
            raise ValueError("A distillation takes no class_weight: the student's labels are rows of the teacher's "
                             "outputs, not classes.")
        for key in ("num_classes", "label_names", "multi_label"):
            if key in arguments and arguments[key] != getattr(self.teacher, key):
                raise ValueError(f"The student must learn the teacher's classes: its {key} is "
                                 f"{getattr(self.teacher, key)!r}, not {arguments[key]!r}.")
        return training.built(lambda: student_classifier(self.teacher, init, **arguments))

    def targets(self, student, x, labels, folder=None):
        """`(x, y)` for the student's `fit`: the training inputs `x` (labelled `labels`, as `BertClassifier.fit`
        takes them) followed by the unlabeled inputs, and their rows into the teacher's outputs on them
        (`TeacherRows`); compiles `student` with the `DistillationLoss` that holds those outputs and labels,
        keeping its optimizer. Prints what the teacher read.

        `folder`: None, or where the run keeps the teacher's outputs (`TEACHER_OUTPUTS_FILE`, written once computed:
        the backup's `prepared_dir`), to read them back instead of running the teacher again when they are of the same
        teacher (its weights and architecture), the same token ids and the same kind; other ones are computed again
        and replace them, with a line saying why. At alpha 0 the loss is the labels' alone: the teacher does not run
        (its outputs are zeros, which the loss weighs 0) and unlabeled inputs, which only its outputs teach from, are
        left out."""
        if not self.teacher_needed:
            left_out = " and the unlabeled texts, which only its outputs teach from, are left out" if (
                self.unlabeled is not None) else ""
            print(f"alpha 0: the loss is the labels' alone, so the teacher does not run{left_out}.")
            inputs, outputs = x, np.zeros((len(labels), self.teacher.num_classes), "float32")
        else:
            unlabeled = self._unlabeled(x, student)
            inputs = x if unlabeled is None else _joined(x, unlabeled)
            count = len(self._texts(inputs))
            extra = f" and {count - len(labels):,} unlabeled text(s)" if unlabeled is not None else ""
            outputs = self._outputs(inputs, f"the {len(labels):,} training examples{extra}", folder)
        loss = DistillationLoss(outputs, student.check_labels(labels), self.temperature, self.alpha, self.kind)
        # no metrics: the labels are rows (and [], not None, drops the accuracy a compiled model had)
        student.compile(optimizer=student.optimizer, loss=loss, metrics=[])
        return inputs, loss.rows()

    def _outputs(self, inputs, what, folder):
        """The teacher's outputs on `inputs` (`what`, in words): read from `folder` if kept there for the same
        teacher, token ids and kind, else computed (and kept there)."""
        prepared = self.teacher.preprocessor.prepare(raw_inputs(self.teacher, inputs, call="predict")[0])
        fingerprint = {"teacher": _teacher_sha256(self.teacher), "inputs": _inputs_sha256(prepared),
                       "kind": self.kind}
        path = None if folder is None else pathlib.Path(folder) / TEACHER_OUTPUTS_FILE
        outputs = None if path is None else _kept_outputs(path, fingerprint)
        if outputs is not None:
            print(f"The teacher's outputs on {what}: read from {path} (the same teacher, token ids and kind).")
            return outputs
        print(f"The teacher labels {what}.")
        outputs = np.asarray(self.teacher.prepared_logits(prepared, verbose=self.verbose), "float32")
        if path is not None and is_chief():
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_file(path) as partial, open(partial, "wb") as file:
                np.savez(file, outputs=outputs, **fingerprint)
        return outputs

    def settings(self):
        """The distillation's settings, as a run records them."""
        count = len(self._texts(self.unlabeled)) if self.unlabeled is not None and self.teacher_needed else None
        return {"teacher": self.source, "temperature": self.temperature, "alpha": self.alpha,
                "unlabeled_texts": count}

    def _unlabeled(self, x, student):
        """The unlabeled inputs, without those that have no tokens for the teacher or the student; checked to be
        inputs of the kind of `x` (single texts or pairs)."""
        if self.unlabeled is None:
            return None
        if isinstance(x, tuple) != isinstance(self.unlabeled, tuple):
            kind = "text pairs, a tuple (texts, pairs)" if isinstance(x, tuple) else "single texts, a list"
            raise ValueError(f"The unlabeled inputs must be read as the training inputs are: {kind}.")
        texts, pairs = (self.unlabeled if isinstance(self.unlabeled, tuple) else (self.unlabeled, None))
        cases = {self.teacher.preprocessor.tokenizer.lowercase, student.preprocessor.tokenizer.lowercase}
        kept = [i for i, text in enumerate(texts)
                if not any(is_blank(text, None if pairs is None else pairs[i], lowercase) for lowercase in cases)]
        if len(kept) < len(texts):
            print(f"{len(texts) - len(kept)} of the {len(texts)} unlabeled texts have no tokens: left out.")
        if pairs is None:
            return [texts[i] for i in kept]
        return [texts[i] for i in kept], [pairs[i] for i in kept]

    @staticmethod
    def _texts(inputs):
        return inputs[0] if isinstance(inputs, tuple) else inputs


def student_classifier(teacher, student, sequence_length=None, **arguments):
    """An uncompiled `BertClassifier` (`arguments`: its classes, as `BertClassifier` takes them) to learn from
    `teacher`, built from `student`:

    - "every-K": the teacher's own layers, every K-th counted down from the top (`every_kth_layer`), with its
      embeddings, pooler and head (DistilBERT starts from every second layer of its teacher), and its tokenizer;
    - a preset name (`kbert.PRESETS`: random weights), a `BertConfig`, a dict of its fields or a JSON file of
      them: random weights, reading the texts with the teacher's tokenizer; a preset's token embeddings are the
      teacher's vocabulary's size, and a config's `vocabulary_size` (the teacher's where it names none) must be;
    - any other model source (`kbert.saving.model_source`: "all_minilm_l6_v2", a folder, a `.keras` file): its
      backbone with a new head, reading with its own tokenizer (a classifier's outputs are per text: the student
      need not read the teacher's tokens); a source without one (no vocab.txt) reads with the teacher's, whose
      size must be its vocabulary's.

    `sequence_length`: tokens per input (default `DEFAULT_SEQUENCE_LENGTH`, at most the backbone's positions).

    Example:
    >>> teacher = BertClassifier.from_preset("bert_tiny", num_classes=2)
    >>> student_classifier(teacher, {"num_layers": 1, "hidden_dim": 32, "num_heads": 2, "intermediate_dim": 64},
    ...                    num_classes=2).backbone.vocabulary_size
    30522
    >>> student_classifier(teacher, {"num_layers": 1, "vocabulary_size": 100}, num_classes=2)
    Traceback (most recent call last):
    ValueError: The student's config has vocabulary_size 100, but it reads the texts with the teacher's tokenizer, of \
30522 tokens: give it vocabulary_size 30522 (or leave it out), or a student with a tokenizer of its own.
    """
    tokenizer = teacher.preprocessor.tokenizer
    every = EVERY.fullmatch(student) if isinstance(student, str) else None
    if every:
        backbone = teacher.backbone
        backbone = with_layers(backbone, every_kth_layer(backbone.num_layers, int(every.group(1))))
        model = _classifier(backbone, tokenizer, sequence_length, arguments)
        model.get_layer("logits").set_weights(teacher.get_layer("logits").get_weights())
        return model
    config = _config(student, tokenizer)
    if config is not None:
        return _classifier(BertBackbone(**config.to_dict()), tokenizer, sequence_length, arguments)
    source = model_source(student)
    if (source.folder / "vocab.txt").is_file():
        return BertClassifier.from_preset(source, compile=False, sequence_length=sequence_length, **arguments)
    backbone = BertBackbone.from_preset(source)
    try:
        check_vocabulary(backbone, tokenizer, "the teacher's tokenizer")
    except ValueError:
        raise ValueError(f"The student {student} has no tokenizer of its own (no vocab.txt in {source.folder}) and "
                         f"its vocabulary_size {backbone.vocabulary_size} is not the teacher's tokenizer's "
                         f"{tokenizer.vocabulary_size} tokens: it cannot read the texts the teacher reads.") from None
    return _classifier(backbone, tokenizer, sequence_length, arguments)


def _config(student, tokenizer):
    """The `BertConfig` of a student given as a preset name, a `BertConfig`, a dict or a JSON file; None for a
    model source. A vocabulary size other than the teacher tokenizer's is refused."""
    if isinstance(student, BertConfig):
        fields = student.to_dict()
    elif isinstance(student, dict):
        fields = dict(student)
    elif isinstance(student, str) and student in PRESETS:
        fields = {**PRESETS[student].to_dict(), "vocabulary_size": tokenizer.vocabulary_size}
    elif isinstance(student, (str, pathlib.Path)) and str(student).endswith(".json"):
        try:
            fields = json.loads(pathlib.Path(student).read_text("utf-8"))
        except ValueError as error:
            raise ValueError(f"{student}: not a JSON object of BertConfig fields ({error}).") from None
        if not isinstance(fields, dict):
            raise ValueError(f"{student}: not a JSON object of BertConfig fields.")
    else:
        return None
    config = BertConfig.from_dict({"vocabulary_size": tokenizer.vocabulary_size, **fields})
    if config.vocabulary_size != tokenizer.vocabulary_size:
        size = tokenizer.vocabulary_size
        raise ValueError(f"The student's config has vocabulary_size {config.vocabulary_size}, but it reads the texts "
                         f"with the teacher's tokenizer, of {size} tokens: give it vocabulary_size {size} (or leave it "
                         "out), or a student with a tokenizer of its own.")
    return config


def _classifier(backbone, tokenizer, sequence_length, arguments):
    """An uncompiled `BertClassifier` on `backbone`, reading with `tokenizer`."""
    length = min(sequence_length or DEFAULT_SEQUENCE_LENGTH, backbone.max_sequence_length)
    return BertClassifier(backbone, preprocessor=BertTextClassifierPreprocessor(tokenizer, length), compile=False,
                          **arguments)


def _joined(x, more):
    """The raw inputs `x` followed by `more` (lists of texts, or tuples (texts, pairs))."""
    if isinstance(x, tuple):
        return tuple(list(part) + list(extra) for part, extra in zip(x, more))
    return list(x) + list(more)


def _kept_outputs(path, fingerprint):
    """The teacher's outputs kept in `path` if they are of `fingerprint` (its names' values); else None, with a line
    saying why they are computed again (none kept says nothing)."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as kept:
            recorded = {name: str(kept[name]) for name in fingerprint}
            outputs = kept["outputs"].astype("float32")
    except UNREADABLE as error:
        print(f"The teacher's outputs kept in {path} cannot be read ({error}): computing them again.")
        return None
    changed = [name for name in fingerprint if recorded[name] != fingerprint[name]]
    if changed:
        words = {"teacher": "another teacher (weights or architecture)", "inputs": "other inputs (token ids)",
                 "kind": f"another kind of output than {fingerprint['kind']}"}
        print(f"The teacher's outputs kept in {path} are of {' and '.join(words[name] for name in changed)}: "
              "computing them again.")
        return None
    return outputs


def _teacher_sha256(teacher):
    """The SHA-256 of what the teacher's outputs on given token ids depend on: its backbone's architecture (config but
    its name), how it pools a long text's windows, and its weights (values, shapes and dtypes, in order)."""
    config = teacher.backbone.get_config()
    backbone = {name: value for name, value in config.items() if name not in ("name", "trainable")}
    described = json.dumps([backbone, teacher.window_pooling, teacher.dtype_policy.name], sort_keys=True, default=str)
    return _arrays_sha256(enumerate(teacher.get_weights()), described)


def _inputs_sha256(prepared):
    """The SHA-256 of the teacher's inputs: the token-id arrays `prepared` (a `Prepared`) holds, and its windows'."""
    arrays = {**prepared.inputs, **({} if prepared.windows is None else {"windows": prepared.windows})}
    return _arrays_sha256(sorted(arrays.items()))


def _arrays_sha256(named_arrays, prefix=""):
    """The SHA-256 of `prefix` and the `(name, array)` pairs in order: each one's name, dtype, shape and values.

    Example:
    >>> _arrays_sha256([("a", np.zeros(2, "int32"))]) == _arrays_sha256([("a", np.zeros(2, "int64"))])
    False
    """
    digest = hashlib.sha256(prefix.encode())
    for name, array in named_arrays:
        array = np.ascontiguousarray(array)
        digest.update(f"{name}{array.dtype}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()

"""Knowledge distillation's loss (Hinton et al. 2015, "Distilling the Knowledge in a Neural Network"; DistilBERT's
recipe): a student `BertClassifier` trained on a teacher's outputs, softened by a temperature, and on the labels
where there are any.

The teacher's outputs (and the labels) are computed once, before training, and held by the loss: a student's `fit`
takes, as its labels, the row number of each example into them (`DistillationLoss.rows()`, a `TeacherRows`), one
value a row, which the student's batches carry as they carry class ids (shuffled, resumed part-way through an epoch,
windows of a long text each with its text's row).
"""

import keras
import numpy as np
from keras import ops

KINDS = ("classes", "multi_label", "regression")


class TeacherRows(np.ndarray):
    """Row numbers into the outputs a `DistillationLoss` holds: the labels `y` of a student's `fit`, which
    `BertClassifier` takes as they are, with that loss compiled (`DistillationLoss.rows`).

    Example:
    >>> rows = DistillationLoss(np.zeros((3, 2))).rows()
    >>> type(rows).__name__, rows.tolist()
    ('TeacherRows', [0, 1, 2])
    """


class DistillationLoss(keras.losses.Loss):
    """The distillation loss of a student's logits (`y_pred`) against a teacher's, for the rows `y_true`.

    For the example of row i, with the teacher's outputs t, the student's s and temperature T (labels y on the
    first `len(labels)` rows; the rows after them, texts the teacher labelled, have none: l = 0, else 1):

    - "classes": alpha * T^2 * KL(softmax(t / T) || softmax(s / T)) + (1 - alpha) * l * cross-entropy(y, softmax(s))
    - "multi_label": the same per class with a sigmoid (the KL divergence of two Bernoulli distributions, and
      binary cross-entropy), each the mean over the classes
    - "regression": alpha * (s - t)^2 + (1 - alpha) * l * (s - y)^2 (a score has no temperature: T must be 1)

    reduced as any Keras loss (the mean over the batch, sample weights applied). T^2 keeps the soft term's
    gradients, which shrink as 1 / T^2, on the scale of the hard term's (Hinton et al.). alpha = 1 learns from the
    teacher alone; alpha = 0 from the labels alone.

    Not saved with a model: a run folder's model is saved uncompiled, and a student trained further is compiled
    again.

    Args:
        teacher_outputs: array (rows, classes) of the teacher's logits, or (rows,) / (rows, 1) of its scores.
        labels: None, or the labels of the first rows: class ids (rows,), 0/1 rows (rows, classes) for
            "multi_label", or scores ((rows,) or (rows, 1)).
        temperature: float above 0.
        alpha: float in [0, 1]. The weight of the teacher's term; the labels' is 1 - alpha.
        kind: one of `KINDS`: what the outputs are (a `BertClassifier`'s: single-label logits, multi-label
            logits, or a score).

    Example:
    >>> loss = DistillationLoss(np.array([[2.0, 0.0], [0.0, 2.0]]), labels=[0], temperature=2.0, alpha=0.5)
    >>> round(float(loss(loss.rows(), np.array([[2.0, 0.0], [0.0, 2.0]]))), 4)  # the teacher's logits: KL 0
    0.0317
    >>> round(float(0.5 * np.log1p(np.exp(-2.0)) / 2), 4)  # (1 - alpha) * cross-entropy of row 0, row 1 unlabelled
    0.0317
    """

    def __init__(self, teacher_outputs, labels=None, temperature=2.0, alpha=0.5, kind="classes",
                 name="distillation", **kwargs):
        super().__init__(name=name, **kwargs)
        check_settings(temperature, alpha)
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {kind!r}.")
        if kind == "regression" and temperature != 1:
            raise ValueError(f"A regressor's outputs are scores, which no temperature softens: temperature must be "
                             f"1 (the soft target is the teacher's score), not {temperature}.")
        teacher = np.asarray(teacher_outputs, "float32")
        if kind == "regression":
            teacher = teacher.reshape(len(teacher), 1)
        if teacher.ndim != 2 or not len(teacher) or kind != "regression" and teacher.shape[1] < 2:
            raise ValueError(f"teacher_outputs must be (rows, classes) logits of 2 classes or more, or (rows,) "
                             f"scores for kind='regression'; got shape {teacher.shape}.")
        if not np.isfinite(teacher).all():
            raise ValueError(f"The teacher's output of row {int(np.flatnonzero(~np.isfinite(teacher).all(1))[0])} "
                             "is not finite.")
        rows, width = teacher.shape
        labels = _checked_labels(labels, kind, rows, width)
        self.temperature, self.alpha, self.kind = float(temperature), float(alpha), kind
        self.labelled = len(labels)
        padded = np.zeros((rows, *labels.shape[1:]), "float32")  # unlabelled rows: zeros, weighed 0
        padded[: len(labels)] = labels
        labelled = (np.arange(rows) < len(labels)).astype("float32")
        self._teacher, self._labels, self._labelled = (ops.convert_to_tensor(value) for value in
                                                       (teacher, padded, labelled))

    def rows(self):
        """The row numbers of the outputs held, in order: the `y` of the student's `fit` on the same inputs."""
        return np.arange(int(self._teacher.shape[0]), dtype="int32").view(TeacherRows)

    def call(self, y_true, y_pred):
        rows = ops.cast(ops.reshape(y_true, (-1,)), "int32")
        teacher, labels, labelled = (ops.take(table, rows, axis=0)
                                     for table in (self._teacher, self._labels, self._labelled))
        student = ops.cast(y_pred, "float32")
        if self.kind == "regression":
            soft = ops.mean(ops.square(student - teacher), axis=-1)
            hard = ops.mean(ops.square(student - ops.reshape(labels, (-1, 1))), axis=-1)
        elif self.kind == "multi_label":
            soft = self.temperature ** 2 * ops.mean(_bernoulli_kl(teacher / self.temperature,
                                                                  student / self.temperature), axis=-1)
            hard = -ops.mean(labels * ops.log_sigmoid(student) + (1 - labels) * ops.log_sigmoid(-student), axis=-1)
        else:
            target = ops.log_softmax(teacher / self.temperature, axis=-1)
            soft = self.temperature ** 2 * ops.sum(
                ops.exp(target) * (target - ops.log_softmax(student / self.temperature, axis=-1)), axis=-1)
            one_hot = ops.one_hot(ops.cast(labels, "int32"), ops.shape(student)[-1])
            hard = -ops.sum(one_hot * ops.log_softmax(student, axis=-1), axis=-1)
        return self.alpha * soft + (1 - self.alpha) * labelled * hard


def check_settings(temperature, alpha):
    """A ValueError naming the setting, for a temperature that is not a finite number above 0 or an alpha outside
    [0, 1].

    Example:
    >>> check_settings(0, 0.5)
    Traceback (most recent call last):
    ValueError: The temperature must be a finite number above 0 (it divides the logits), not 0.
    """
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 < temperature < np.inf:
        raise ValueError(f"The temperature must be a finite number above 0 (it divides the logits), not "
                         f"{temperature!r}.")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha, the weight of the teacher's outputs against the labels', must be from 0 to 1, "
                         f"not {alpha!r}.")


def _checked_labels(labels, kind, rows, width):
    """`labels` as a float32 array of at most `rows` rows, checked for `kind` (ids within `width` classes, 0/1 rows
    of `width`, finite scores); an empty one for None."""
    shape = {"multi_label": (0, width)}.get(kind, (0,))
    labels = np.zeros(shape, "float32") if labels is None else np.asarray(labels, "float32")
    if kind == "regression" and labels.ndim == 2 and labels.shape[1] == 1:  # scores as a regressor's targets: (rows, 1)
        labels = labels[:, 0]
    if len(labels) > rows:
        raise ValueError(f"Got {len(labels)} labels for {rows} rows of teacher outputs: the labels are those of the "
                         "first rows.")
    if labels.shape[1:] != shape[1:]:
        raise ValueError(f"kind={kind!r} takes labels of shape (rows, {width}) (0/1 a class)" if kind == "multi_label"
                         else f"kind={kind!r} takes one label a row, not labels of shape {labels.shape}.")
    if kind == "classes":
        bad = np.flatnonzero((labels != np.round(labels)) | (labels < 0) | (labels >= width))
        what = f"a class id from 0 to {width - 1}"
    elif kind == "multi_label":
        bad = np.flatnonzero(((labels != 0) & (labels != 1)).any(axis=1))
        what = "a row of 0s and 1s"
    else:
        bad = np.flatnonzero(~np.isfinite(labels))
        what = "a finite score"
    if len(bad):
        raise ValueError(f"Label {int(bad[0])} is {labels[bad[0]].tolist()}, not {what}.")
    return labels


def _bernoulli_kl(p_logits, q_logits):
    """KL(Bernoulli(sigmoid(p_logits)) || Bernoulli(sigmoid(q_logits))), elementwise, from logits (stable)."""
    p = ops.sigmoid(p_logits)
    return (p * (ops.log_sigmoid(p_logits) - ops.log_sigmoid(q_logits))
            + (1 - p) * (ops.log_sigmoid(-p_logits) - ops.log_sigmoid(-q_logits)))

"""Distillation's loss against its definition (Hinton et al. 2015), computed here in numpy from probabilities, on
every backend: the temperature's softening and its T^2, the labels' term on labelled rows alone, alpha's weights;
the three kinds of outputs; what a student's fit and evaluate compute with it; its bad settings, refused."""

import keras
import numpy as np
import pytest

from kbert.tasks import BertClassifier
from kbert.tasks.distillation_loss import DistillationLoss, TeacherRows

ROWS, CLASSES, LABELLED = 7, 3, 4


def softmax(logits):
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def sigmoid(logits):
    return 1 / (1 + np.exp(-logits))


def reference(kind, teacher, student, labels, temperature, alpha):
    """The mean over rows of each row's loss, from the definition, in float64 probabilities; `labels`: {row: label}
    of the labelled rows."""
    teacher, student = np.asarray(teacher, "float64"), np.asarray(student, "float64")
    losses = []
    for i in range(len(student)):
        t, s = teacher[i], student[i]
        if kind == "classes":
            p, q = softmax(t / temperature), softmax(s / temperature)
            soft = temperature ** 2 * np.sum(p * np.log(p / q))
            hard = -np.log(softmax(s)[int(labels[i])]) if i in labels else 0.0
        elif kind == "multi_label":
            p, q = sigmoid(t / temperature), sigmoid(s / temperature)
            soft = temperature ** 2 * np.mean(p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q)))
            hard = (-np.mean(labels[i] * np.log(sigmoid(s)) + (1 - labels[i]) * np.log(1 - sigmoid(s)))
                    if i in labels else 0.0)
        else:
            soft = (s[0] - t[0]) ** 2
            hard = (s[0] - labels[i]) ** 2 if i in labels else 0.0
        losses.append(alpha * soft + (1 - alpha) * hard)
    return np.mean(losses)


def outputs(kind, seed):
    rng = np.random.default_rng(seed)
    width = 1 if kind == "regression" else CLASSES
    teacher, student = (rng.normal(0, 2, (ROWS, width)).astype("float32") for _ in range(2))
    labels = {"classes": rng.integers(0, CLASSES, LABELLED), "multi_label": rng.integers(0, 2, (LABELLED, CLASSES)),
              "regression": rng.normal(0, 1, LABELLED)}[kind]
    return teacher, student, labels


@pytest.mark.parametrize("kind, temperature, alpha", [
    ("classes", 1.0, 0.5), ("classes", 3.0, 0.3), ("classes", 0.5, 1.0), ("classes", 4.0, 0.0),
    ("multi_label", 2.0, 0.7), ("multi_label", 1.0, 0.0), ("regression", 1.0, 0.4)])
def test_the_loss_is_its_definition(kind, temperature, alpha):
    teacher, student, labels = outputs(kind, seed=int(temperature * 10 + alpha * 100))
    loss = DistillationLoss(teacher if kind != "regression" else teacher[:, 0], labels, temperature, alpha, kind)
    rows = np.array([5, 0, 3, 6, 1])  # a batch: some rows, in any order, labelled (0, 1, 3) and not (5, 6)
    got = float(keras.ops.convert_to_numpy(loss(rows, student[rows])))
    expected = reference(kind, teacher[rows], student[rows],
                         {j: labels[i] for j, i in enumerate(rows) if i < LABELLED}, temperature, alpha)
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-6)


def test_the_temperature_squared_keeps_the_teacher_term_on_the_scale_of_the_labels_term():
    """Logits that differ little: KL at temperature T is about 1/T^2 of KL at 1; times T^2, about the same."""
    teacher = np.array([[0.2, -0.1, 0.05]], "float32")
    student = np.array([[0.0, 0.1, -0.05]], "float32")
    terms = [float(keras.ops.convert_to_numpy(DistillationLoss(teacher, None, t, 1.0)([0], student)))
             for t in (1.0, 4.0, 16.0)]
    assert abs(terms[1] / terms[0] - 1) < 0.1 and abs(terms[2] / terms[0] - 1) < 0.1
    p, q = (softmax(np.float64(logits[0]) / 16) for logits in (teacher, student))
    np.testing.assert_allclose(terms[2], 256 * np.sum(p * np.log(p / q)), rtol=5e-3)  # a KL of 6e-5 in float32


def test_identical_logits_leave_the_labels_term_alone():
    logits = np.array([[3.0, -1.0], [0.5, 0.4]], "float32")
    loss = DistillationLoss(logits, [1, 0], temperature=2.0, alpha=0.25)
    expected = 0.75 * np.mean([-np.log(softmax(logits[0])[1]), -np.log(softmax(logits[1])[0])])
    np.testing.assert_allclose(float(keras.ops.convert_to_numpy(loss(loss.rows(), logits))), expected, rtol=1e-5)


def test_a_student_fits_and_evaluates_on_the_rows_with_the_loss(tiny_init):
    """Evaluated on its rows (no dropout), a student's loss is the definition on its own logits; fit lowers it."""
    texts = ["a good film", "a dull film", "fun", "awful and boring", "the man plays", "nobody sleeps"]
    rng = np.random.default_rng(0)
    teacher = rng.normal(0, 2, (len(texts), 2)).astype("float32")
    student = BertClassifier.from_preset(tiny_init, num_classes=2, sequence_length=8)
    loss = DistillationLoss(teacher, [1, 0, 1], temperature=2.0, alpha=0.5)
    with pytest.raises(ValueError, match="compile the model with the DistillationLoss"):
        student.fit(texts, loss.rows(), epochs=1, verbose=0)
    student.compile(loss=loss, metrics=[], learning_rate=1e-2)
    rows = loss.rows()
    assert isinstance(rows[1:], TeacherRows)
    before = student.evaluate(texts, rows, batch_size=4, verbose=0)
    expected = reference("classes", teacher, student.logits(texts), {0: 1, 1: 0, 2: 1}, 2.0, 0.5)
    np.testing.assert_allclose(before, expected, rtol=1e-4)
    student.fit(texts, rows, batch_size=3, epochs=8, verbose=0, shuffle_seed=0)
    assert student.evaluate(texts, rows, batch_size=4, verbose=0) < before


@pytest.mark.parametrize("arguments, message", [
    ({"temperature": 0}, r"The temperature must be a finite number above 0 \(it divides the logits\), not 0."),
    ({"temperature": -1.0}, "The temperature must be a finite number above 0"),
    ({"temperature": float("inf")}, "The temperature must be a finite number above 0"),
    ({"alpha": 1.5}, "alpha, the weight of the teacher's outputs against the labels', must be from 0 to 1, not 1.5."),
    ({"alpha": -0.1}, "must be from 0 to 1, not -0.1"),
    ({"kind": "ranking"}, "kind must be one of"),
    ({"kind": "regression", "temperature": 2.0}, "temperature must be 1"),
    ({"labels": [0, 2]}, r"Label 1 is 2.0, not a class id from 0 to 1."),
    ({"labels": [0, 1, 0, 1]}, "Got 4 labels for 3 rows"),
    ({"labels": [[0, 0.5]], "kind": "multi_label"}, r"Label 0 is \[0.0, 0.5\], not a row of 0s and 1s."),
    ({"labels": [1.0, np.nan], "kind": "regression", "temperature": 1}, "Label 1 is nan, not a finite score."),
])
def test_bad_settings_are_refused(arguments, message):
    teacher = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]], "float32")
    if arguments.get("kind") == "regression":
        teacher = teacher[:, 0]
    with pytest.raises(ValueError, match=message):
        DistillationLoss(teacher, **arguments)


def test_teacher_outputs_that_are_not_finite_are_refused():
    with pytest.raises(ValueError, match="The teacher's output of row 1 is not finite."):
        DistillationLoss(np.array([[1.0, 0.0], [np.nan, 1.0]]))

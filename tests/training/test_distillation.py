"""The students a teacher teaches (its own layers, every K-th; a preset; a config; a folder with or without a tokenizer
of its own), what `Distillation` gives a student's fit, and its bad inputs, each refused with a clear line. Every
backend (the loss against its definition: tests/tasks/test_distillation_loss.py; the recipe and its resume:
tests/recipes/test_distillation.py)."""

import json

import keras
import numpy as np
import pytest

from kbert import BertBackbone
from kbert.saving import BACKBONE_FILE
from kbert.tasks import BertClassifier, BertTokenClassifier
from kbert.tasks.distillation_loss import DistillationLoss, TeacherRows
from kbert.training.distillation import Distillation, student_classifier
from kbert.training.fine_tuning import FineTuning
from tests.conftest import TINY
from tests.tasks.conftest import VOCABULARY, tiny_init  # noqa: F401 (a fixture)

TEXTS = ["a good film", "a dull and boring film", "fun fun", "the man is not very fine"]
CLASSES = dict(num_classes=2, label_names=["negative", "positive"])


@pytest.fixture(scope="module")
def teacher(tiny_init):
    """A 4-layer classifier on the tiny vocabulary, its weights random (a fine-tuned one's stand-in)."""
    keras.utils.set_random_seed(5)
    reader = BertClassifier.from_preset(tiny_init, num_classes=2, sequence_length=10).preprocessor
    return BertClassifier(BertBackbone(**{**TINY, "num_layers": 4}), preprocessor=reader, **CLASSES)


def numpy_weights(layer):
    return [keras.ops.convert_to_numpy(weight) for weight in layer.weights]


def test_every_second_layer_of_the_teacher_with_its_embeddings_pooler_and_head(teacher):
    student = student_classifier(teacher, "every-2", sequence_length=10, **CLASSES)
    assert student.backbone.num_layers == 2 and not student.compiled
    for j, i in enumerate([1, 3]):
        for got, expected in zip(numpy_weights(student.backbone.get_layer(f"transformer_layer_{j}")),
                                 numpy_weights(teacher.backbone.get_layer(f"transformer_layer_{i}")), strict=True):
            np.testing.assert_array_equal(got, expected)
    for name in ("token_embedding", "pooled_dense"):
        for got, expected in zip(numpy_weights(student.backbone.get_layer(name)),
                                 numpy_weights(teacher.backbone.get_layer(name)), strict=True):
            np.testing.assert_array_equal(got, expected)
    for got, expected in zip(numpy_weights(student.get_layer("logits")), numpy_weights(teacher.get_layer("logits")),
                             strict=True):
        np.testing.assert_array_equal(got, expected)
    assert student.preprocessor.tokenizer is teacher.preprocessor.tokenizer
    assert (student.label_names, student.preprocessor.sequence_length) == (CLASSES["label_names"], 10)


def test_every_layer_of_the_teacher_gives_its_outputs(teacher):
    student = student_classifier(teacher, "every-1", sequence_length=10, **CLASSES)
    np.testing.assert_array_equal(student.logits(TEXTS), teacher.logits(TEXTS))


def test_a_preset_student_reads_with_the_teachers_vocabulary(teacher):
    student = student_classifier(teacher, "bert_tiny", **CLASSES)
    assert (student.backbone.num_layers, student.backbone.hidden_dim, student.backbone.vocabulary_size) == (2, 128, 50)
    assert student.preprocessor.tokenizer is teacher.preprocessor.tokenizer


def test_a_config_student_from_a_dict_or_a_json_file(teacher, tmp_path):
    fields = {"num_layers": 1, "hidden_dim": 16, "num_heads": 2, "intermediate_dim": 32, "max_sequence_length": 16}
    (tmp_path / "student.json").write_text(json.dumps(fields))
    for student in (fields, str(tmp_path / "student.json")):
        model = student_classifier(teacher, student, sequence_length=32, **CLASSES)
        assert (model.backbone.num_layers, model.backbone.hidden_dim, model.backbone.vocabulary_size) == (1, 16, 50)
        assert model.preprocessor.sequence_length == 16  # at most the student's positions
    (tmp_path / "typo.json").write_text('{"num_layer": 1}')
    with pytest.raises(ValueError, match=r"Unknown BertConfig field\(s\) \['num_layer'\]"):
        student_classifier(teacher, str(tmp_path / "typo.json"), **CLASSES)
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="list.json: not a JSON object of BertConfig fields"):
        student_classifier(teacher, str(tmp_path / "list.json"), **CLASSES)


def test_a_student_config_of_another_vocabulary_is_refused(teacher):
    with pytest.raises(ValueError, match="The student's config has vocabulary_size 30522, but it reads the texts with "
                                         "the teacher's tokenizer, of 50 tokens: give it vocabulary_size 50"):
        student_classifier(teacher, {"num_layers": 1, "vocabulary_size": 30522}, **CLASSES)


def test_a_folder_student_reads_with_its_own_tokenizer_or_else_the_teachers(teacher, tmp_path):
    own = tmp_path / "own"  # a pretrained encoder of another vocabulary, with it
    own.mkdir()
    BertBackbone(**{**TINY, "vocabulary_size": 60}).save(own / BACKBONE_FILE)
    (own / "vocab.txt").write_text("".join(f"{token}\n" for token in [*VOCABULARY, *(f"x{i}" for i in range(10))]))
    student = student_classifier(teacher, str(own), **CLASSES)
    assert student.preprocessor.tokenizer.vocabulary_size == 60 == student.backbone.vocabulary_size

    bare = tmp_path / "bare"  # a backbone without a tokenizer, of the teacher's vocabulary size: reads with its
    bare.mkdir()
    BertBackbone(**TINY).save(bare / BACKBONE_FILE)
    assert student_classifier(teacher, str(bare), **CLASSES).preprocessor.tokenizer is teacher.preprocessor.tokenizer

    (own / "vocab.txt").unlink()  # of another size, without a tokenizer: refused
    with pytest.raises(ValueError, match=f"The student {own} has no tokenizer of its own \\(no vocab.txt in {own}\\) "
                                         "and its vocabulary_size 60 is not the teacher's tokenizer's 50 tokens"):
        student_classifier(teacher, str(own), **CLASSES)


def test_the_targets_are_the_teachers_outputs_on_the_texts_and_the_unlabeled_ones(teacher):
    unlabeled = ["someone plays", " ", "[UNK]", "nobody sleeps"]
    distillation = Distillation(teacher, unlabeled=unlabeled, verbose=0)
    student = distillation.student(FineTuning(seed=0), "bert_tiny", sequence_length=10, **CLASSES)
    x, y = distillation.targets(student, TEXTS, ["positive", "negative", "positive", "negative"])
    assert x == [*TEXTS, "someone plays", "[UNK]", "nobody sleeps"]  # a text of no tokens left out
    assert isinstance(y, TeacherRows) and y.tolist() == list(range(7))
    loss = student.loss
    assert isinstance(loss, DistillationLoss) and (loss.temperature, loss.alpha, loss.kind) == (2.0, 0.5, "classes")
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(loss._teacher), teacher.logits(x))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(loss._labels)[:4], [1, 0, 1, 0])
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(loss._labelled), [1, 1, 1, 1, 0, 0, 0])
    assert list(student.evaluate(x, y, verbose=0, return_dict=True)) == ["loss"]  # no accuracy of rows as classes
    assert distillation.settings() == {"teacher": None, "temperature": 2.0, "alpha": 0.5, "unlabeled_texts": 4}


def test_a_regressor_teacher_takes_no_temperature(tiny_init):
    regressor = BertClassifier.from_preset(tiny_init, num_classes=1, sequence_length=10)
    assert Distillation(regressor).temperature == 1.0
    with pytest.raises(ValueError, match="The teacher is a regressor, whose scores no temperature softens"):
        Distillation(regressor, temperature=2.0)


@pytest.mark.parametrize("arguments, message", [
    ({"temperature": 0.0}, "The temperature must be a finite number above 0"),
    ({"temperature": -2}, "The temperature must be a finite number above 0"),
    ({"alpha": 1.01}, "must be from 0 to 1, not 1.01"),
    ({"alpha": -1}, "must be from 0 to 1, not -1"),
])
def test_bad_settings_are_refused(teacher, arguments, message):
    with pytest.raises(ValueError, match=message):
        Distillation(teacher, **arguments)


def test_a_teacher_of_another_task_is_refused(tiny_init):
    tagger = BertTokenClassifier.from_preset(tiny_init, label_names=["O", "B-PER", "I-PER"])
    with pytest.raises(ValueError, match="A teacher is a fine-tuned BertClassifier, not a BertTokenClassifier"):
        Distillation(tagger)


def test_a_student_of_other_classes_or_inputs_is_refused(teacher):
    distillation = Distillation(teacher, unlabeled=(["a man"], ["plays"]), verbose=0)
    with pytest.raises(ValueError, match=r"The student must learn the teacher's classes: its num_classes is 2, not 3"):
        distillation.student(FineTuning(), "bert_tiny", num_classes=3)
    student = distillation.student(FineTuning(), "bert_tiny", **CLASSES)
    with pytest.raises(ValueError, match="The unlabeled inputs must be read as the training inputs are: single "
                                         "texts, a list"):
        distillation.targets(student, TEXTS, [0, 1, 0, 1])


@pytest.fixture
def teacher_runs(monkeypatch):
    """The teacher's passes over texts (`prepared_logits`, which `logits` runs too), counted."""
    calls = []
    run = BertClassifier.prepared_logits

    def counted(model, prepared, *args, **kwargs):
        calls.append(len(prepared.inputs["token_ids"]))
        return run(model, prepared, *args, **kwargs)

    monkeypatch.setattr(BertClassifier, "prepared_logits", counted)
    return calls


def kept_targets(distillation, folder, texts=TEXTS):
    student = distillation.student(FineTuning(seed=0), "bert_tiny", sequence_length=10, **CLASSES)
    x, _ = distillation.targets(student, texts, [1, 0, 1, 0][: len(texts)], folder)
    return x, keras.ops.convert_to_numpy(student.loss._teacher)


def test_the_teachers_outputs_are_kept_and_read_back_without_running_it(teacher, tmp_path, teacher_runs, capsys):
    distillation = Distillation(teacher, unlabeled=["someone plays", "nobody sleeps"], verbose=0)
    x, outputs = kept_targets(distillation, tmp_path)
    assert teacher_runs == [6] and "The teacher labels the 4 training examples and 2 unlabeled" in capsys.readouterr().out
    with np.load(tmp_path / "teacher_outputs.npz") as kept:
        assert kept["outputs"].dtype == np.float32 and str(kept["kind"]) == "classes"
        np.testing.assert_array_equal(kept["outputs"], outputs)
    np.testing.assert_array_equal(outputs, teacher.logits(x))  # a fresh pass of the teacher on the same inputs
    assert [path.name for path in tmp_path.iterdir()] == ["teacher_outputs.npz"]  # no partial write left

    teacher_runs.clear()
    again, read = kept_targets(Distillation(teacher, unlabeled=["someone plays", "nobody sleeps"], verbose=0), tmp_path)
    assert teacher_runs == [] and again == x
    np.testing.assert_array_equal(read, outputs)
    assert f"The teacher's outputs on the 4 training examples and 2 unlabeled text(s): read from {tmp_path}" in (
        capsys.readouterr().out)


def test_other_inputs_another_teacher_or_a_damaged_file_compute_them_again(teacher, tmp_path, teacher_runs, capsys,
                                                                          monkeypatch):
    kept_targets(Distillation(teacher, unlabeled=["someone plays"], verbose=0), tmp_path)
    x, outputs = kept_targets(Distillation(teacher, unlabeled=["someone plays", "fun"], verbose=0), tmp_path)
    assert teacher_runs == [5, 6] and "are of other inputs (token ids): computing them again" in capsys.readouterr().out
    np.testing.assert_array_equal(outputs, teacher.logits(x))
    with np.load(tmp_path / "teacher_outputs.npz") as kept:  # replaced
        np.testing.assert_array_equal(kept["outputs"], outputs)
    teacher_runs.clear()  # the reference pass

    with monkeypatch.context() as patch:  # the teacher reads 4 tokens a text: other token ids
        patch.setattr(teacher.preprocessor, "sequence_length", 4)
        kept_targets(Distillation(teacher, unlabeled=["someone plays", "fun"], verbose=0), tmp_path)
    assert teacher_runs == [6] and "other inputs (token ids)" in capsys.readouterr().out

    other = BertClassifier(teacher.backbone, preprocessor=teacher.preprocessor, **CLASSES)  # another head
    _, outputs = kept_targets(Distillation(other, unlabeled=["someone plays", "fun"], verbose=0), tmp_path)
    assert teacher_runs == [6, 6] and ("are of another teacher (weights or architecture) and other inputs (token ids): "
                                       "computing them again") in capsys.readouterr().out  # (those of 4 tokens)
    np.testing.assert_array_equal(outputs, other.logits(x))

    teacher_runs.clear()  # the reference pass
    kept_targets(Distillation(teacher, unlabeled=["someone plays", "fun"], verbose=0), tmp_path)
    assert teacher_runs == [6] and "are of another teacher (weights or architecture): computing" in (
        capsys.readouterr().out)
    (tmp_path / "teacher_outputs.npz").write_bytes(b"cut short")
    kept_targets(Distillation(other, unlabeled=["someone plays", "fun"], verbose=0), tmp_path)
    assert teacher_runs == [6, 6] and "teacher_outputs.npz cannot be read" in capsys.readouterr().out


def test_at_alpha_0_the_teacher_never_runs_and_unlabeled_texts_are_left_out(teacher, tmp_path, teacher_runs,
                                                                              capsys):
    x, outputs = kept_targets(Distillation(teacher, alpha=0.0, verbose=0), tmp_path)
    assert teacher_runs == [] and list(tmp_path.iterdir()) == []
    assert "alpha 0: the loss is the labels' alone, so the teacher does not run." in capsys.readouterr().out
    np.testing.assert_array_equal(outputs, np.zeros((4, 2)))
    student = Distillation(teacher, alpha=0.0, verbose=0).student(FineTuning(seed=0), "bert_tiny", sequence_length=10,
                                                                 **CLASSES)
    x, y = Distillation(teacher, alpha=0.0, verbose=0).targets(student, TEXTS, [1, 0, 1, 0])
    logits = student.logits(x)  # the loss is the labels' cross-entropy alone
    expected = -np.mean(np.take_along_axis(logits - np.log(np.exp(logits).sum(-1, keepdims=True)),
                                           np.array([[1], [0], [1], [0]]), axis=1))
    np.testing.assert_allclose(student.evaluate(x, y, verbose=0, return_dict=True)["loss"], expected, rtol=1e-4)
    teacher_runs.clear()  # the student's pass
    distillation = Distillation(teacher, alpha=0.0, unlabeled=["someone plays"], verbose=0)
    x, outputs = kept_targets(distillation, tmp_path)
    assert teacher_runs == [] and x == TEXTS and outputs.shape == (4, 2)
    assert distillation.settings()["unlabeled_texts"] is None
    assert "the teacher does not run and the unlabeled texts, which only its outputs teach from, are left out" in (
        capsys.readouterr().out)

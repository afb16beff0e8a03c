"""`fit(class_weight=...)` (kbert.tasks.class_weights): the loss of one step at learning rate 0 against weighted
cross-entropy computed here in numpy from the model's logits (Keras's mean over the batch of weight x loss), by
class name or id, on raw texts, token ids and a tf.data.Dataset; "balanced" against scikit-learn; the tasks and
weights it refuses."""

import keras
import numpy as np
import pytest

from kbert import BertBackbone, BertClassifier, BertQuestionAnswerer, BertSentenceEncoder, BertTokenClassifier
from kbert.tasks import BertTextClassifierPreprocessor, BertTokenClassifierPreprocessor
from kbert.tasks.class_weights import class_weight_table
from kbert.text import BertTokenizer
from tests.conftest import TINY
from tests.tasks.conftest import VOCABULARY

NAMES = ["neg", "neu", "pos"]
TEXTS = ["a good film", "dull", "a man plays", "awful and boring film", "fun", "the film is fine"]
LABELS = ["pos", "neg", "neu", "neg", "pos", "pos"]
WEIGHTS = {"neg": 3.0, "pos": 0.5}  # "neu" keeps 1, as in Keras


def classifier(**kwargs):
    keras.utils.set_random_seed(1)
    preprocessor = BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY), sequence_length=8)
    model = BertClassifier(BertBackbone(**TINY, dropout=0.0), 3, preprocessor=preprocessor, dropout=0.0,
                           label_names=NAMES, **kwargs)
    model.compile(optimizer=keras.optimizers.SGD(0.0))  # the step's loss on these weights; the task's loss
    return model


def cross_entropy(logits, ids):
    logits = np.asarray(logits, "float64")
    log_probabilities = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -np.take_along_axis(log_probabilities, np.asarray(ids)[..., None], -1)[..., 0]


def one_step_loss(model, x, y=None, **kwargs):
    return model.fit(x, y, batch_size=len(TEXTS), shuffle=False, epochs=1, verbose=0, **kwargs).history["loss"][0]


@pytest.mark.parametrize("inputs", ["texts by name", "texts by id", "token ids", "tf.data texts"])
def test_a_classifiers_loss_weighs_each_text_by_its_class(inputs):
    model = classifier()
    ids = np.array([NAMES.index(label) for label in LABELS])
    weights = np.array([WEIGHTS.get(name, 1.0) for name in NAMES])
    expected = np.mean(weights[ids] * cross_entropy(model.logits(TEXTS), ids))
    by_id = {NAMES.index(name): weight for name, weight in WEIGHTS.items()}
    if inputs == "token ids":
        loss = one_step_loss(model, model.preprocessor.prepare(TEXTS).inputs, ids, class_weight=WEIGHTS)
    elif inputs == "tf.data texts":
        import tensorflow as tf

        data = tf.data.Dataset.from_tensor_slices((TEXTS, ids)).batch(len(TEXTS))
        loss = model.fit(data, epochs=1, verbose=0, class_weight=WEIGHTS).history["loss"][0]
    else:
        loss = one_step_loss(model, TEXTS, LABELS, class_weight=WEIGHTS if inputs == "texts by name" else by_id)
    assert loss == pytest.approx(expected, rel=1e-4)
    assert abs(expected - np.mean(cross_entropy(model.logits(TEXTS), ids))) > 0.05  # the weights change it


def test_balanced_weights_are_scikit_learns_and_weigh_the_loss():
    from sklearn.utils.class_weight import compute_class_weight

    ids = np.array([NAMES.index(label) for label in LABELS])
    balanced = compute_class_weight("balanced", classes=np.arange(3), y=ids)
    np.testing.assert_allclose(class_weight_table("balanced", NAMES, ids), balanced, rtol=1e-6)
    model = classifier()
    expected = np.mean(balanced[ids] * cross_entropy(model.logits(TEXTS), ids))
    assert one_step_loss(model, TEXTS, LABELS, class_weight="balanced") == pytest.approx(expected, rel=1e-4)


def test_a_token_classifiers_loss_weighs_each_word_by_its_tag():
    keras.utils.set_random_seed(1)
    tags = ["O", "B-PER", "I-PER"]
    preprocessor = BertTokenClassifierPreprocessor(BertTokenizer(VOCABULARY), sequence_length=8)
    model = BertTokenClassifier(BertBackbone(**TINY, dropout=0.0), tags, preprocessor=preprocessor, dropout=0.0)
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    words = [["a", "man", "plays"], ["someone", "is", "fun", "and", "good"]]
    labels = [["O", "B-PER", "O"], ["B-PER", "I-PER", "O", "O", "O"]]
    prepared = preprocessor.prepare(words, model.check_labels(labels))
    first = prepared.sample_weight > 0  # each word's first piece
    losses = cross_entropy(keras.ops.convert_to_numpy(model(prepared.inputs)), prepared.y)[first]
    weights = np.array([1.0, 4.0, 2.0])[prepared.y[first]]
    plain = model.fit(words, labels, epochs=1, shuffle=False, verbose=0).history["loss"][0]
    weighed = model.fit(words, labels, epochs=1, shuffle=False, verbose=0,
                        class_weight={"B-PER": 4.0, "I-PER": 2.0}).history["loss"][0]
    # Keras divides both sums by the batch's size: their ratio is the weighted sum's over the plain one's
    assert weighed / plain == pytest.approx(np.sum(weights * losses) / np.sum(losses), rel=1e-4)


@pytest.mark.parametrize("make, class_weight, message", [
    (lambda: classifier(), {"bad": 2.0}, r"the key 'bad', which is neither a class name of \['neg', 'neu', 'pos'\] "
                                         r"nor a class id \(0 to 2\)"),
    (lambda: classifier(), {3: 2.0}, "the key 3, which is neither"),
    (lambda: classifier(), {"pos": -1.0}, r"class_weight\['pos'\] is -1.0: a weight is a finite number, 0 or more"),
    (lambda: classifier(), "heavy", "class_weight takes {class name or id: weight} or \"balanced\", not 'heavy'"),
    (lambda: BertClassifier(BertBackbone(**TINY), 3, multi_label=True,
                            preprocessor=BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY))),
     {0: 2.0}, "no class_weight with multi_label=True"),
    (lambda: BertClassifier(BertBackbone(**TINY), 1,
                            preprocessor=BertTextClassifierPreprocessor(BertTokenizer(VOCABULARY))),
     {0: 2.0}, r"no class_weight for a regressor \(num_classes=1\)"),
])
def test_weights_and_tasks_that_cannot_be_are_refused(make, class_weight, message):
    labels = [[0], [1, 2], [2], [], [0], [1]] if "multi_label" in message else [0.5] * 6 if "regressor" in message \
        else LABELS
    with pytest.raises(ValueError, match=message):
        make().fit(TEXTS, labels, epochs=1, verbose=0, class_weight=class_weight)


def test_tasks_without_classes_and_balanced_datasets_are_refused():
    import tensorflow as tf

    qa = BertQuestionAnswerer.from_preset("bert_tiny", sequence_length=32)
    with pytest.raises(ValueError, match="BertQuestionAnswerer.fit takes no class_weight: its examples have no class"):
        qa.fit((["Who sings?"], ["Ann sings."]), ["Ann"], class_weight={0: 2.0}, verbose=0)
    encoder = BertSentenceEncoder.from_preset("bert_tiny", sequence_length=16)
    with pytest.raises(ValueError, match="BertSentenceEncoder.fit takes no class_weight"):
        encoder.fit((["a"], ["b"]), [1.0], class_weight={0: 2.0}, verbose=0)
    data = tf.data.Dataset.from_tensor_slices((TEXTS, [0] * 6)).batch(3)
    with pytest.raises(ValueError, match='class_weight="balanced" counts the labels of data in memory'):
        classifier().fit(data, class_weight="balanced", verbose=0)

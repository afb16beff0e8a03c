import keras
import numpy as np
from keras import ops

from kbert.optimizers import BertAdamW


def test_a_token_seen_several_times_steps_by_its_summed_gradient():
    # On TensorFlow an embedding's gradient holds one row per occurrence (IndexedSlices);
    # Adam's second moment must square their sum, as torch.optim.AdamW does.
    embedding = keras.layers.Embedding(3, 2, embeddings_initializer="zeros")
    inputs = keras.Input((4,), dtype="int32")
    per_position = np.array([[1.0, -2.0], [1.0, -2.0], [-1.5, 0.5], [2.0, 1.0]], "float32")
    model = keras.Model(inputs, ops.sum(embedding(inputs) * per_position, axis=(1, 2)))
    model.compile(optimizer=BertAdamW(learning_rate=0.1, weight_decay=0.0, epsilon=1e-6),
                  loss=lambda y_true, y_pred: ops.mean(y_pred))
    model.fit(np.array([[0, 0, 0, 1]]), np.zeros(1), batch_size=1, epochs=1, verbose=0)
    # Row 0's gradient sums to (0.5, -3.5), row 1's is (2, 1): AdamW's first step moves each
    # entry by -lr * sign(gradient). (Squared row by row, row 0 moved by (-0.024, 0.12).)
    np.testing.assert_allclose(ops.convert_to_numpy(embedding.embeddings),
                               [[-0.1, 0.1], [-0.1, -0.1], [0.0, 0.0]], atol=1e-6)

import keras
import numpy as np

from kbert.layers.initializers import clone_initializer


def values(initializer, shape=(4, 4)):
    return keras.ops.convert_to_numpy(initializer(shape))


def test_an_unseeded_initializer_repeats_itself_and_its_clones_do_not():
    initializer = keras.initializers.TruncatedNormal(stddev=0.02)
    assert np.array_equal(values(initializer), values(initializer))  # Keras 3's behaviour, the reason for clones
    first, second = values(clone_initializer(initializer)), values(clone_initializer(initializer))
    assert not np.array_equal(first, second)
    assert np.abs(first).max() <= 0.04  # still the truncated normal: within two standard deviations


def test_clones_repeat_under_a_global_seed_and_a_seeded_initializer_keeps_its_seed():
    initializer = keras.initializers.TruncatedNormal(stddev=0.02)
    keras.utils.set_random_seed(3)
    first = values(clone_initializer(initializer))
    keras.utils.set_random_seed(3)
    np.testing.assert_array_equal(values(clone_initializer(initializer)), first)
    seeded = keras.initializers.GlorotUniform(seed=7)
    np.testing.assert_array_equal(values(clone_initializer(seeded)), values(keras.initializers.GlorotUniform(seed=7)))
    assert clone_initializer("zeros") == "zeros"

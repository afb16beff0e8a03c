import keras
import numpy as np


def test_fast_dropout_masks_keep_the_dropout_rate():
    from kbert.backend_speedups import use_fast_dropout_masks

    use_fast_dropout_masks()
    if keras.config.backend() == "jax":
        import jax

        assert jax.config.jax_threefry_partitionable is False
    dropped = keras.layers.Dropout(0.1, seed=3)(np.ones((64, 128, 128), "float32"), training=True)
    assert abs(float(np.mean(keras.ops.convert_to_numpy(dropped) == 0)) - 0.1) < 0.005

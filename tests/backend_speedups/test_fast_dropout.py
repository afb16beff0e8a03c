import keras
import numpy as np

from kbert.backend_speedups.fast_dropout import fast_dropout_masks, fit_dropout_masks


def test_fast_dropout_masks_keep_the_dropout_rate_within_the_block_only():
    with fast_dropout_masks():
        if keras.config.backend() == "jax":
            import jax

            assert jax.config.jax_threefry_partitionable is False
        dropped = keras.layers.Dropout(0.1, seed=3)(np.ones((64, 128, 128), "float32"), training=True)
    assert abs(float(np.mean(keras.ops.convert_to_numpy(dropped) == 0)) - 0.1) < 0.005
    if keras.config.backend() == "jax":
        import jax

        assert jax.config.jax_threefry_partitionable is True  # JAX's default again after the block


def test_fit_trains_within_fast_masks_unless_the_speedup_is_off(monkeypatch):
    if keras.config.backend() != "jax":
        with fit_dropout_masks():  # nothing changes
            return
    import jax

    with fit_dropout_masks():
        assert jax.config.jax_threefry_partitionable is False
    monkeypatch.setenv("KBERT_SPEEDUPS", "-jax_dropout_masks")
    with fit_dropout_masks():
        assert jax.config.jax_threefry_partitionable is True

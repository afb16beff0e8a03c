import keras
import numpy as np
import pytest
from keras import ops

from kbert.backend_speedups.jax_dense import matmul


@pytest.mark.parametrize("shape", [(5, 4), (2, 5, 4), (2, 3, 5, 4)])
def test_matmul_is_the_product(shape):
    rng = np.random.default_rng(0)
    x, kernel = rng.normal(size=shape).astype("float32"), rng.normal(size=(4, 6)).astype("float32")
    got = ops.convert_to_numpy(matmul(ops.convert_to_tensor(x), ops.convert_to_tensor(kernel)))
    np.testing.assert_allclose(got, x @ kernel, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(keras.config.backend() != "jax", reason="XLA:CPU's dot placement under JAX")
def test_the_kernel_gradient_runs_in_ynnpack_where_a_plain_matmul_does_not():
    """The reason `matmul` exists: written `x @ W`, the kernel gradient of a (batch, length, in)
    input becomes a dot XLA:CPU computes itself (a plain `dot(` in the optimized program); through
    `matmul` every dot of the gradient is a YNNPACK fusion. If a JAX upgrade sends both to YNNPACK,
    the second assertion fails and `jax_dense` is no longer needed."""
    import jax
    import jax.numpy as jnp

    x, kernel = jnp.ones((8, 16, 64)), jnp.ones((64, 32))

    def plain_dots(product):
        gradient = jax.jit(jax.grad(lambda w: jnp.sum(jnp.tanh(product(x, w)))))
        program = gradient.lower(kernel).compile().as_text()
        return [line for line in program.split("ENTRY")[1].splitlines() if " dot(" in line]

    assert plain_dots(matmul) == []
    assert len(plain_dots(jnp.matmul)) == 1

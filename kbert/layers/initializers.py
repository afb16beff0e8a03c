"""`clone_initializer`: an initializer of its own for each weight, as Keras 3 needs."""

import keras


def clone_initializer(initializer):
    """A copy of `initializer` that draws values of its own (an initializer's name or a callable comes back as it is).

    A Keras 3 initializer without a seed draws one when made and repeats it at every call: given to every layer, it
    starts every layer with the same kernel. A copy made from its config draws a new seed (repeatably under
    `keras.utils.set_random_seed`); a seeded one keeps its seed. As keras-hub's `clone_initializer`.

    Example:
    >>> import numpy as np
    >>> initializer = keras.initializers.TruncatedNormal(stddev=0.02)
    >>> same = [keras.ops.convert_to_numpy(initializer((2, 2))) for _ in range(2)]
    >>> cloned = [keras.ops.convert_to_numpy(clone_initializer(initializer)((2, 2))) for _ in range(2)]
    >>> bool(np.array_equal(*same)), bool(np.array_equal(*cloned))
    (True, False)
    """
    if not isinstance(initializer, keras.initializers.Initializer):
        return initializer
    return initializer.__class__.from_config(initializer.get_config())

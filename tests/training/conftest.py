import keras


def dense_model(learning_rate, seed=0):
    """One Dense unit on 2 inputs, compiled with SGD at `learning_rate` on the mean squared error."""
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(learning_rate), "mse")
    return model

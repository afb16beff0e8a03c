"""TensorFlow: a task's optimizer variables (AdamW's moments) made before `fit` traces its training step.

Without a distribution strategy Keras 3 leaves them to the first trace of the step, and a `tf.function` that makes
variables while it traces is traced again without them: every first `fit` on TensorFlow built its training graph
twice. Built first, it is built once: the five tasks of tests/tasks/test_task_api.py (`bert_tiny`, two steps each)
fitted in 47-56 s instead of 66.5 s on a quiet 2-core machine.
"""


def build_optimizer_first(model):
    """Builds `model`'s optimizer on its trainable variables, what the first trace of its training step would
    do, unless it is built already, the model is not (its variables are made in that trace too) or a distribution
    strategy holds the model (Keras builds it then, in the strategy's scope).

    Example:
    >>> import keras
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    >>> model.compile(optimizer="adam", loss="mse")
    >>> build_optimizer_first(model)
    >>> model.optimizer.built, len(model.optimizer.variables)
    (True, 6)
    """
    strategy = getattr(model, "_distribute_strategy", None)  # TensorFlow's trainer's alone
    if model.built and not model.optimizer.built and strategy is None:
        model.optimizer.build(model.trainable_variables)

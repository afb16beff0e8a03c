import keras

from kbert.training.schedules import WarmupLinearDecay


def bert_adamw(learning_rate, total_steps, warmup_ratio=0.1, weight_decay=0.01, clipnorm=1.0):
    """AdamW as BERT trains: warmup then linear decay, no decay on LayerNorm or biases.

    Args:
        learning_rate: float. Peak learning rate (2e-5..5e-5 to fine-tune, 1e-4 to pretrain).
        total_steps: int. Optimizer steps of the whole run.
        warmup_ratio: float. Share of the steps spent warming up.
        weight_decay: float. Decoupled weight decay on kernels and embeddings.
        clipnorm: float or None. Global gradient-norm clipping.

    Example:
    >>> optimizer = bert_adamw(3e-5, total_steps=1000)
    >>> round(float(optimizer.learning_rate), 8)  # step 0 of the warmup
    0.0
    """
    optimizer = keras.optimizers.AdamW(
        learning_rate=WarmupLinearDecay(learning_rate, int(warmup_ratio * total_steps), total_steps),
        weight_decay=weight_decay,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        global_clipnorm=clipnorm,
    )
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    return optimizer

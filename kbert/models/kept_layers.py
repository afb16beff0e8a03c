"""A smaller encoder made of some of a backbone's own layers (DistilBERT starts its student from every second layer of
its teacher): `every_kth_layer` chooses them, `with_layers` builds the backbone that keeps them."""


def every_kth_layer(num_layers, k):
    """The layers (from 0) that keep every `k`-th of `num_layers`, counted down from the top one, which a task's head
    was trained on: the top layer, then the one `k` below it, and so on.

    Example:
    >>> every_kth_layer(6, 2), every_kth_layer(12, 3), every_kth_layer(6, 1)
    ([1, 3, 5], [2, 5, 8, 11], [0, 1, 2, 3, 4, 5])
    >>> every_kth_layer(6, 7)
    Traceback (most recent call last):
    ValueError: Keeping every k-th of 6 layers takes k from 1 to 6 (6: the top layer alone), not 7.
    """
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= num_layers:
        raise ValueError(f"Keeping every k-th of {num_layers} layers takes k from 1 to {num_layers} ({num_layers}: "
                         f"the top layer alone), not {k!r}.")
    return sorted(range(num_layers - 1, -1, -k))


def with_layers(backbone, layers):
    """A backbone of `backbone`'s class and settings with `len(layers)` transformer layers, its layer j a copy of
    `backbone`'s layer `layers[j]`, and every other weight (the embeddings and their layer norm, the pooler) copied
    as it is. A backbone whose layers share weights (`num_layer_groups`) is refused.

    Args:
        backbone: a `kbert.BertBackbone`.
        layers: increasing layer numbers (from 0) of `backbone` to keep.

    Example:
    >>> from kbert import BertBackbone
    >>> backbone = BertBackbone.from_preset("bert_tiny", num_layers=4)
    >>> smaller = with_layers(backbone, every_kth_layer(4, 2))
    >>> smaller.num_layers, bool((smaller.get_layer("transformer_layer_0").get_weights()[0]
    ...                           == backbone.get_layer("transformer_layer_1").get_weights()[0]).all())
    (2, True)
    """
    layers = list(layers)
    if not layers or layers != sorted(set(layers)) or not 0 <= layers[0] <= layers[-1] < backbone.num_layers:
        raise ValueError(f"Keep increasing layer numbers, at least one, from 0 to {backbone.num_layers - 1} (the "
                         f"backbone's {backbone.num_layers} layers); got {layers}.")
    if getattr(backbone, "num_layer_groups", None):
        raise ValueError(f"The backbone's {backbone.num_layers} layers share {backbone.num_layer_groups} group(s) of "
                         "weights (ALBERT's): there are no layers of their own to keep.")
    kept = type(backbone).from_config({**backbone.get_config(), "num_layers": len(layers)})
    source = {_block_name(j): _block_name(i) for j, i in enumerate(layers)}
    for layer in kept.layers:
        if layer.weights:
            layer.set_weights(backbone.get_layer(source.get(layer.name, layer.name)).get_weights())
    return kept


def _block_name(i):
    """The name of transformer layer `i` in a `BertBackbone`."""
    return f"transformer_layer_{i}"

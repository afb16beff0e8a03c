"""Keyword arguments checked by name: a misspelt `dropuot=0.3` is refused, not ignored."""

import difflib
import inspect

# What keras.Model's constructor takes besides the model's own arguments (and a saved config carries).
KERAS_MODEL_KEYWORDS = ("name", "trainable", "dtype")


def check_keywords(cls, kwargs, also=()):
    """Raises a TypeError for the first name in `kwargs` that neither `cls.__init__` nor Keras's Model takes
    (nor `also`, e.g. `from_preset`'s own arguments), naming the closest known one.

    Example:
    >>> class Head:
    ...     def __init__(self, num_classes, dropout=0.1, **kwargs):
    ...         pass
    >>> check_keywords(Head, {"num_classes": 2, "name": "head"})
    >>> check_keywords(Head, {"dropuot": 0.3})
    Traceback (most recent call last):
    ...
    TypeError: Head got an unexpected keyword argument 'dropuot' (did you mean 'dropout'?).
    """
    parameters = inspect.signature(cls.__init__).parameters.values()
    known = [p.name for p in parameters if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    known += [*also, *KERAS_MODEL_KEYWORDS]
    for name in kwargs:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f"; it takes {', '.join(sorted(set(known)))}"
            raise TypeError(f"{cls.__name__} got an unexpected keyword argument {name!r}{hint}.")

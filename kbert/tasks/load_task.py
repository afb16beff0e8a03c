"""A task model from any model source (`kbert.saving.model_source`): what `BertTask.from_preset` loads."""

import inspect

from kbert.keywords import check_keywords
from kbert.models import BertBackbone
from kbert.saving import check_vocabulary, model_source


def load_task(cls, preset, preprocessor=None, sequence_length=None, compile=True, **kwargs):
    """The task model of class `cls` that `cls.from_preset(preset, ...)` returns (see `BertTask.from_preset`):
    a saved model of `cls` whole (with the `decoding_settings` asked for); else `preset`'s backbone with a new head,
    or a Hugging Face checkpoint's head of this task (`hf_head_arguments`).

    Example:
    >>> from kbert import BertClassifier
    >>> load_task(BertClassifier, "bert_tiny", num_classes=3).num_classes
    3
    """
    settable = preprocessor_settings(cls)
    asked = {key: value for key, value in kwargs.items() if key in settable}
    check_keywords(cls, kwargs, also=("preprocessor", "sequence_length", "compile", *settable))  # before any read
    kwargs = {key: value for key, value in kwargs.items() if key not in asked}
    if preprocessor is not None and asked:
        raise ValueError(f"{cls.__name__}.from_preset got a preprocessor and preprocessor settings "
                         f"{sorted(asked)}: give the settings to the preprocessor, or give no preprocessor.")
    source = model_source(preset)  # each of its files read once, whichever way it is taken
    saved = source.saved_model  # a task model comes with its preprocessor
    if isinstance(saved, cls) and set(kwargs) <= set(cls.decoding_settings):
        saved.set_decoding(**kwargs)
        if preprocessor is not None:
            check_vocabulary(saved.backbone, preprocessor.tokenizer, "the preprocessor's tokenizer")
            saved.preprocessor = preprocessor
        elif sequence_length or asked:
            saved.preprocessor = with_settings(saved.preprocessor, asked, sequence_length and min(
                sequence_length, saved.backbone.max_sequence_length))
        if compile:
            saved.compile()
        return saved
    from kbert.text import load_hf_tokenizer  # TensorFlow, loaded on first use

    backbone = BertBackbone.from_preset(source)
    tokenizer = source.load_tokenizer(load_hf_tokenizer, backbone)  # the family's: WordPiece, SentencePiece or BPE
    head = hf_head_arguments(cls, source, kwargs)
    settings, preprocessing = {}, {}
    if head is not None:  # the head's checkpoint: the task's and preprocessing's settings kbert wrote beside it
        from kbert.convert import hf_kbert_settings

        settings, preprocessing = hf_kbert_settings(source.checkpoint)
    saved_length = preprocessing.pop("sequence_length", None)
    length = min(sequence_length or saved_length or cls.default_sequence_length, backbone.max_sequence_length)
    preprocessor = preprocessor or cls.preprocessor_class(tokenizer, sequence_length=length,
                                                          **{**preprocessing, **asked})
    if head is None:
        return cls(backbone, preprocessor=preprocessor, compile=compile, **kwargs)
    from kbert.convert import load_hf_head

    model = cls(backbone, preprocessor=preprocessor, compile=compile, **{**settings, **head, **kwargs})
    load_hf_head(model, source.checkpoint)
    return model


def preprocessor_settings(cls):
    """The names of the settings of `cls`'s preprocessor: `cls.preprocessor_class`'s arguments besides its
    tokenizer and sequence length, which `from_preset` takes.

    Example:
    >>> from kbert import BertClassifier
    >>> preprocessor_settings(BertClassifier)
    ('doc_stride', 'train_windows')
    """
    parameters = inspect.signature(cls.preprocessor_class.__init__).parameters.values()
    return tuple(p.name for p in parameters if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
                 and p.name not in ("self", "tokenizer", "sequence_length"))


def with_settings(preprocessor, settings, sequence_length=None):
    """A copy of `preprocessor` (on the same tokenizer) with `settings` (a dict) and `sequence_length` (if given).

    Example:
    >>> from kbert import BertClassifier
    >>> preprocessor = BertClassifier.from_preset("bert_tiny", num_classes=2).preprocessor
    >>> again = with_settings(preprocessor, {"doc_stride": 32}, 64)
    >>> again.doc_stride, again.sequence_length, again.tokenizer is preprocessor.tokenizer
    (32, 64, True)
    """
    config = {key: value for key, value in preprocessor.get_config().items() if key != "tokenizer"}
    if sequence_length:
        config["sequence_length"] = sequence_length
    return type(preprocessor)(preprocessor.tokenizer, **{**config, **settings})


def hf_head_arguments(cls, source, kwargs):
    """The head arguments of a Hugging Face checkpoint of task `cls` that `kwargs` keep (else None).

    Args:
        cls: the task model's class.
        source: `kbert.saving.ModelSource`. What `from_preset` was given.
        kwargs: dict. The task's constructor arguments asked for (another class count: another head).

    Example:
    >>> from kbert import BertClassifier
    >>> from kbert.saving import model_source
    >>> hf_head_arguments(BertClassifier, model_source("bert_tiny"), {}) is None  # a preset has no head
    True
    """
    if source.kind != "hugging_face":
        return None
    from kbert.convert import hf_task_arguments

    task, head = hf_task_arguments(source.checkpoint)
    changed = [key for key in ("num_classes", "label_names", "multi_label", "next_sentence")
               if key in kwargs and key in head and kwargs[key] != head[key]]
    if task != cls.__name__ or changed:
        return None  # another task, or another head: the backbone alone
    return head


def load_trained_head(cls, given, head, sources):
    """The `cls` task model that `given` holds with its trained head (a run folder or `.keras` file of a `cls`, or a
    Hugging Face folder of its head), uncompiled. A ValueError where it holds none (a base model, another task, a
    preset's random weights): "`given` holds no `head` (its kind): give `sources`."

    Example:
    >>> from kbert import BertClassifier
    >>> load_trained_head(BertClassifier, "bert_tiny", "trained classifier", "a run folder")
    Traceback (most recent call last):
    ...
    ValueError: bert_tiny holds no trained classifier (preset): give a run folder.
    """
    source = model_source(given)
    if not (isinstance(source.saved_model, cls) or hf_head_arguments(cls, source, {}) is not None):
        raise ValueError(f"{given} holds no {head} ({source.kind.replace('_', ' ')}): give {sources}.")
    return cls.from_preset(source, compile=False)

import weakref

import keras
import numpy as np
from keras import ops

from kbert.config import DEFAULT_BATCH_SIZE
from kbert.data.batches.padded import PaddedBatches
from kbert.distribution import data_dimension
from kbert.distribution.torch_data_parallel import active as torch_job
from kbert.layers.mean_pooling import l2_normalize, mean_pool
from kbert.models.compute_dtype import with_compute_dtype
from kbert.tasks.bert_preprocessor import text_list
from kbert.tasks.bert_sentence_encoder_preprocessor import BertSentenceEncoderPreprocessor, text_columns
from kbert.tasks.bert_task import BertTask
from kbert.tasks.bi_encoder_losses import CosineSimilarityLoss, MultipleNegativesRankingLoss
from kbert.tasks.packed_calls import packed_sequences, worth_packing
from kbert.tasks.raw_datasets import is_dataset
from kbert.tasks.table_inputs import raw_inputs
from kbert.tasks.task_data import takes_as_is

POOLINGS = ("mean", "cls", "max")
OBJECTIVES = ("cosine", "ranking")
TOKENIZED_TEXTS = 4096  # texts `encode` tokenizes at once, then serves longest first
_pooling_models = weakref.WeakKeyDictionary()  # encoder -> its graph before the L2 step (`encode`'s)


@keras.saving.register_keras_serializable(package="kbert")
class BertSentenceEncoder(BertTask):
    """kbert's sentence encoder, trainable (Sentence-BERT, a bi-encoder): each text on its own through the
    backbone, pooled to one embedding, so that the cosine similarity of two embeddings carries the texts' likeness.

    `from_preset("all_minilm_l6_v2")` is sentence-transformers' all-MiniLM-L6-v2 pipeline (mean pooling over
    real tokens, then L2 normalisation), so the dot product of two embeddings is their cosine similarity.
    `encode` embeds a text or texts with sentence-transformers' `encode` arguments; `predict` embeds texts with
    Keras's, (texts, hidden_dim); `similarity` gives the cosine similarity of texts paired row by row. `fit`
    takes pairs or triplets of texts as a tuple of columns, with the `objective` set at construction
    (sentence-transformers' losses):

    - "cosine": `fit((texts, others), scores)`, a score per pair in `score_range` (e.g. (0, 5) for
      STS-B), mapped to [0, 1]; the loss is the squared difference of the pair's cosine similarity
      and its mapped score (`CosineSimilarityLoss`).
    - "ranking": `fit((anchors, positives))` or `fit((anchors, positives, hard_negatives))`, no labels;
      each anchor's positive must outscore every other positive (and hard negative) of its batch
      (`MultipleNegativesRankingLoss`): the batch's other examples are its negatives, so larger batches
      give more of them. A batch of one example has none (refused).

    Under a distribution that splits batches (`kbert.distribution`), training on pairs is refused: the
    in-batch negatives would be each device's alone. Inference works as for every task.

    Args:
        backbone: `kbert.BertBackbone`.
        preprocessor: `BertSentenceEncoderPreprocessor` or None (token ids only).
        pooling: "mean" (over real tokens, sentence-transformers' default), "cls" (the [CLS] token's
            vector) or "max" (each dimension's largest over real tokens).
        normalize: bool. L2-normalise the embeddings (all-MiniLM-L6-v2 does); training is the same
            either way, as both losses compare directions.
        objective: "cosine" or "ranking", as above.
        score_range: (low, high). The scores "cosine" takes; `low` maps to 0 and `high` to 1.
        scale: float. "ranking"'s similarities are multiplied by this (sentence-transformers' 20).

    Example:
    >>> model = BertSentenceEncoder.from_preset("bert_tiny", score_range=(0, 5))
    >>> history = model.fit((["a cat sits", "a man sings"], ["a cat is sitting", "stocks fell"]), [4.8, 0.2],
    ...                     verbose=0)
    >>> model.predict(["a cat sits", "a dog runs"], verbose=0).shape
    (2, 128)
    >>> model.similarity(["a cat sits"], ["a cat sits"]).round(4).tolist()
    [1.0]
    """

    preprocessor_class = BertSentenceEncoderPreprocessor
    default_learning_rate = 2e-5  # sentence-transformers'
    input_names = ("texts", "pairs", "negatives")

    def __init__(self, backbone, preprocessor=None, pooling="mean", normalize=True, objective="cosine",
                 score_range=(0.0, 1.0), scale=20.0, **kwargs):
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, not {pooling!r}.")
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, not {objective!r}.")
        low, high = (float(bound) for bound in score_range)
        if not low < high:
            raise ValueError(f"score_range=({low}, {high}) must be (low, high) with low < high.")
        inputs = backbone.input
        sequence = ops.cast(backbone(inputs)["sequence_output"], "float32")
        embeddings = pool(sequence, inputs["padding_mask"], pooling)
        if normalize:
            embeddings = l2_normalize(embeddings)
        super().__init__(inputs, embeddings, backbone, preprocessor, config={
            "pooling": pooling, "normalize": normalize, "objective": objective, "score_range": [low, high],
            "scale": scale}, **kwargs)

    @classmethod
    def from_preset(cls, preset, preprocessor=None, sequence_length=None, compile=True, **kwargs):
        """`BertTask.from_preset`; a sentence-transformers folder (`modules.json`, as
        `export_to_transformers` writes and all_minilm_l6_v2 ships) also gives its pooling, its
        normalisation and its `max_seq_length` (`kbert.convert.read_sentence_transformers_settings`),
        unless asked otherwise.

        Example:
        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> BertSentenceEncoder.from_preset("bert_tiny", pooling="max", normalize=False).export_to_transformers(folder)
        >>> again = BertSentenceEncoder.from_preset(folder)
        >>> again.pooling, again.normalize
        ('max', False)
        """
        from kbert.convert import read_sentence_transformers_settings
        from kbert.saving import model_source

        source = model_source(preset)
        settings = (read_sentence_transformers_settings(source.path) if source.kind in ("pretrained", "hugging_face")
                    else {})
        folder_length = settings.pop("sequence_length", None)
        return super().from_preset(source, preprocessor, sequence_length or folder_length, compile,
                                   **{**settings, **kwargs})

    @property
    def needs_labels(self):
        return self.objective == "cosine"

    def default_compile_arguments(self):
        if self.objective == "ranking":
            return {"loss": MultipleNegativesRankingLoss(self.scale)}
        return {"loss": CosineSimilarityLoss()}

    def encode(self, texts, batch_size=None, normalize_embeddings=None, show_progress_bar=False,
               convert_to_numpy=True, convert_to_tensor=False, dtype="float32", pack=False):
        """The embeddings of `texts`; takes sentence-transformers' `encode` arguments of the same names.

        Texts are tokenized `TOKENIZED_TEXTS` at a time and served longest first, in batches of similar
        length (`PaddedBatches.predict`), through this model's graph before its L2 step, compiled by XLA on
        TensorFlow and JAX; the rows come back in input order, L2-normalised in numpy where asked.

        Args:
            texts: str, or a list of str (or any column `predict` takes). A str is one text and gives one row.
            batch_size: int or None (32). Texts per backbone call.
            normalize_embeddings: None for the model's own `normalize`; True divides each embedding by its
                L2 norm; False returns them as pooled (with all-MiniLM-L6-v2: before its Normalize step).
            show_progress_bar: bool. Show a `keras.utils.Progbar` over the batches.
            convert_to_numpy: bool. False returns one backend tensor instead of numpy.
            convert_to_tensor: bool. True returns one backend tensor (overrides convert_to_numpy).
            dtype: "float32", or "bfloat16" to compute in bfloat16 (`kbert.models.compute_dtype`), faster on
                CPUs with bfloat16 instructions (AVX-512 BF16, AMX). Embeddings come out float32 either way.
            pack: bool. Compute on packed rows (`kbert.tasks.packed_calls`; `batch_size` rows a call), each text
                pooled over its own tokens, not in padded batches (a lone text: padded, `worth_packing`).

        Returns:
            A float32 array of shape (len(texts), hidden_dim), or (hidden_dim,) for a str.

        Example:
        >>> encoder = BertSentenceEncoder.from_preset("all_minilm_l6_v2")
        >>> e = encoder.encode(["A man plays the guitar.", "Someone is playing music."])
        >>> e.shape, bool(e[0] @ e[1] > 0.5)
        ((2, 384), True)
        >>> encoder.encode("A man plays the guitar.").shape
        (384,)
        """
        batch_size = DEFAULT_BATCH_SIZE if batch_size is None else batch_size
        if batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size}.")
        if self.preprocessor is None:
            raise ValueError("BertSentenceEncoder.encode takes texts, and this model has no preprocessor: build it "
                             "with one, or predict on token ids.")
        single = isinstance(texts, (str, bytes))
        texts = raw_inputs(self, texts, call="encode")[0]  # a tuple of texts: a list
        refuse_pairs(texts, "encode")
        texts = text_list(texts)
        model = _pooling_model(with_compute_dtype(self, dtype))
        chunks = [texts[start : start + TOKENIZED_TEXTS] for start in range(0, len(texts), TOKENIZED_TEXTS)]
        steps = sum(-(-len(chunk) // batch_size) for chunk in chunks)
        progress = keras.utils.Progbar(steps, unit_name="batch") if show_progress_bar else None
        embeddings = [np.zeros((0, self.backbone.hidden_dim), "float32")]
        for chunk in chunks:
            inputs = self.preprocessor.prepare(chunk).inputs
            if pack and worth_packing(inputs):
                embeddings.append(packed_pool(with_compute_dtype(self, dtype).backbone, inputs, self.pooling,
                                              batch_size))
                continue
            batches = PaddedBatches(inputs, batch_size=batch_size)
            embeddings.append(batches.predict(model, token_outputs=False, progress=progress))
        embeddings = np.concatenate(embeddings)
        if self.normalize if normalize_embeddings is None else normalize_embeddings:
            embeddings /= np.maximum(np.linalg.norm(embeddings, axis=-1, keepdims=True), 1e-12)
        if single:
            embeddings = embeddings[0]
        return ops.convert_to_tensor(embeddings) if convert_to_tensor or not convert_to_numpy else embeddings

    def similarity(self, texts, others, batch_size=None):
        """The cosine similarity of `texts[i]` and `others[i]` for each i (numpy, (len(texts),))."""
        first, second = text_columns((texts, others))
        embeddings = self.encode(first + second, batch_size, normalize_embeddings=True)
        return np.sum(embeddings[: len(first)] * embeddings[len(first) :], axis=-1)

    def export_to_transformers(self, path):
        """Writes this bi-encoder as a sentence-transformers folder: the backbone as Hugging Face's `BertModel`
        (config, safetensors, tokenizer) with the module files of its pooling and normalisation, which
        `sentence_transformers.SentenceTransformer(path)` loads and encodes with as this model does.
        `BertSentenceEncoder.from_preset(path)` reads it back, pooling and normalisation included.

        Example:
        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> BertSentenceEncoder.from_preset("bert_tiny", pooling="cls").export_to_transformers(folder)
        >>> sorted(os.listdir(folder))[:4]
        ['1_Pooling', '2_Normalize', 'config.json', 'model.safetensors']
        """
        from kbert.convert import save_hf, write_sentence_transformers_modules

        save_hf(self.backbone, path, tokenizer=getattr(self.preprocessor, "tokenizer", None))
        length = self.preprocessor.sequence_length if self.preprocessor else self.backbone.max_sequence_length
        write_sentence_transformers_modules(path, self.pooling, self.normalize, self.backbone.hidden_dim, length)

    def predict(self, x, batch_size=None, verbose="auto", **kwargs):
        if self.preprocessor is not None and not takes_as_is(self, x) and not is_dataset(x):
            x = raw_inputs(self, x, call="predict")[0]  # a tuple of texts: a list
        refuse_pairs(x, "predict")
        return super().predict(x, batch_size=batch_size, verbose=verbose, **kwargs)

    def check_labels(self, y):
        if self.objective == "ranking":
            return y  # `_batches`' placeholder, one value an example
        scores = np.asarray(y, "float64").reshape(-1)
        low, high = self.score_range
        outside = np.flatnonzero(~((scores >= low) & (scores <= high)))  # NaN too
        if len(outside):
            raise ValueError(f"Pair {int(outside[0])}'s score (counting from 0) is {scores[outside[0]]:g}, "
                             f"outside score_range ({low:g}, {high:g}) ({len(outside)} scores are); construct the "
                             "model with the range your scores use.")
        return ((scores - low) / (high - low)).astype("float32")

    def check_label_spec(self, spec):
        if self.objective == "ranking" or not (spec.dtype.is_integer or spec.dtype.is_floating) or (
                spec.shape.rank not in (1, 2) or spec.shape.rank == 2 and spec.shape[-1] != 1):
            raise ValueError(f"BertSentenceEncoder on a tf.data.Dataset trains the cosine objective on (pairs, "
                             f"scores), one score a pair; this one's labels are {spec.dtype.name} of shape "
                             f"{spec.shape} (objective {self.objective!r}).")

    def checked_labels(self, y):
        import tensorflow as tf

        low, high = self.score_range
        scores = tf.reshape(tf.cast(y, tf.float32), [-1])
        tf.debugging.assert_equal(tf.reduce_all((scores >= low) & (scores <= high)), True,
                                  message=f"a score outside score_range ({low:g}, {high:g})")
        return (scores - low) / (high - low)

    def _batches(self, x, y, sample_weight, batch_size, **kwargs):
        if is_dataset(x):
            if self.objective == "ranking":
                raise ValueError("The ranking objective trains on in-memory columns (anchors, positives[, "
                                 "negatives]), not on a tf.data.Dataset (not built yet).")
            return super()._batches(x, y, sample_weight, batch_size, **kwargs)
        if not isinstance(x, tuple):
            raise ValueError("BertSentenceEncoder trains and evaluates on a tuple of columns: (texts, others) with "
                             "scores, or (anchors, positives[, negatives]); predict takes a list of texts.")
        if data_dimension(self) > 1 or torch_job() is not None:
            raise ValueError("BertSentenceEncoder trains on pairs in one process on one device: under a "
                             "distribution that splits batches, each device's in-batch negatives would be "
                             "its own (not built yet).")
        if self.objective == "ranking":
            if y is not None:
                raise ValueError("The ranking objective reads no labels: fit((anchors, positives)) without y; "
                                 "for scored pairs construct the model with objective='cosine'.")
            count = len(text_columns(x)[0])
            examples = min(batch_size or DEFAULT_BATCH_SIZE, count)
            if examples < 2:
                raise ValueError(f"The ranking objective takes the other examples of a batch as an anchor's "
                                 f"negatives: a batch of {examples} example has none; use 2 or more examples and "
                                 "batch_size (sentence-transformers uses 32 and more).")
            y = np.zeros(count, "float32")  # Keras's loss takes labels: one (unread) value an example
        return super()._batches(x, y, sample_weight, batch_size, **kwargs)


def pool(sequence, padding_mask, pooling):
    """One embedding per row of `sequence` (batch, length, hidden): its real tokens' mean, its [CLS]
    vector, or each dimension's largest value over real tokens."""
    if pooling == "mean":
        return mean_pool(sequence, padding_mask, normalize=False)
    if pooling == "cls":
        return sequence[:, 0]
    # padding at -1e9, as sentence-transformers' max pooling
    return ops.max(ops.where(ops.expand_dims(padding_mask, -1) > 0, sequence, -1e9), axis=1)


def packed_pool(backbone, inputs, pooling, batch_size=None):
    """`pool` of each text of `inputs` (a `Prepared`'s) over its own tokens of packed rows (`packed_sequences`):
    float32 (texts, hidden).

    Example:
    >>> from kbert import BertBackbone
    >>> mask = np.array([[1, 1, 1], [1, 1, 0]], "int32")
    >>> packed_pool(BertBackbone.from_preset("bert_tiny"), {"token_ids": mask + 1, "segment_ids": 0 * mask,
    ...                                                      "padding_mask": mask}, "mean").shape
    (2, 128)
    """
    pooled = {"mean": lambda v: v.mean(0), "cls": lambda v: v[0], "max": lambda v: v.max(0)}[pooling]
    return np.stack([pooled(vectors) for vectors in packed_sequences(backbone, inputs, batch_size)])


def refuse_pairs(x, call):
    """A ValueError where `predict` or `encode` (`call`) is given a tuple of columns (pairs of texts)."""
    if isinstance(x, tuple):
        raise ValueError(f"BertSentenceEncoder.{call} encodes texts, one embedding each; for pairs of texts "
                         "call similarity(texts, others).")


def _pooling_model(encoder):
    """`encoder`'s graph before its L2 step, as `encode` runs it: compiled by XLA on TensorFlow too (Keras's
    default there is graph mode on CPU; with lengths in buckets, 11,498 STS-B sentences ran at 341 then 528
    texts/s, against 356 then 390)."""
    if encoder not in _pooling_models:
        inputs = encoder.backbone.input
        sequence = ops.cast(encoder.backbone(inputs)["sequence_output"], "float32")
        model = keras.Model(inputs, pool(sequence, inputs["padding_mask"], encoder.pooling))
        model.jit_compile = keras.config.backend() in ("tensorflow", "jax")
        _pooling_models[encoder] = model
    return _pooling_models[encoder]

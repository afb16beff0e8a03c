"""What a backbone's frozen features hold: their geometry and a linear probe on a sentence TSV.

    .venv/bin/python tools/backbone_probe.py saved_models/gutenberg_mini saved_models/gutenberg_mini_random
    .venv/bin/python tools/backbone_probe.py all_minilm_l6_v2 bert_mini --train 500 --test 500

Each argument is anything `kbert.BertBackbone.from_preset` takes (a folder written by apps/pretrain.py,
of any family, with its kind of tokenizer; a Hugging Face folder; a preset; "all_minilm_l6_v2"). The
sentences come from a `sentence<TAB>label` TSV (default: SST-2's train.tsv under `kbert.paths.data_dir()`; without
it the probe is skipped with a message). They are split as the task apps split them: the
held-out part is `SentenceExamples.split(0.1, seed)` (the 10% apps/sentiment.py validates on),
the probe-train sentences are the first --train of the rest in the seeded order
`shuffled(seed)` (what `apps/sentiment.py train --limit N --seed S` trains on first), and the
test sentences are --test of the held-out part in the order `shuffled(seed + 1)`: disjoint.

For each backbone, in inference mode (no dropout), three sentence features:
    pooled  the pooled output (tanh dense on [CLS]), what `BertClassifier` reads (none where the
            family has no pooler: ELECTRA, DistilBERT)
    cls     the last layer's [CLS] vector (`sequence_output[:, 0]`)
    mean    the mean of the last layer over real tokens ([CLS] and [SEP] included)
and for each feature, on the test sentences:
    eff.rank  effective rank (Roy & Vetterli, 2007): center the features, take the singular
              values s_i, p_i = s_i^2 / sum_j s_j^2 (the share of variance along each
              principal direction); eff.rank = exp(-sum_i p_i log p_i). It is d when the
              variance is spread evenly over d directions and 1 when all of it lies on one.
    top PC    p_1, the share of variance along the first principal direction.
    mean cos  mean cosine similarity (uncentered) over all pairs of distinct sentences;
              near 1 when every sentence maps to about the same vector.
    probe     test accuracy of a logistic regression on the standardized frozen features,
              its inverse regularisation C picked from --c-grid by the best mean accuracy of
              3-fold stratified cross-validation on the probe-train sentences, then refit on
              all of them (scikit-learn's LogisticRegression, from requirements-bench.txt).
The majority-class rate is the test accuracy of always answering the class most frequent
among the probe-train sentences.

For a pretraining run folder with a checkpoint (.NAME.backup/step-N.weights.h5 beside it, and settings.json,
as apps/pretrain.py leaves them; not an ELECTRA run's), the MLM head is read back from the checkpoint (it is not
in backbone.keras) and run twice: on the run's held-out text, masked as apps/pretrain.py's
held-out evaluation masks it (static masking, seed 1, rows of the run's --seq-len tokens, pairs
when the run has an NSP head), and on the test sentences, one a row, masked the same way
(`mask_batch`: 15% of the tokens, at most 20 a row). Each line gives the MLM accuracy
(beside metrics.json's, for the held-out text), that of always guessing the most frequent
masked token, and the head's most frequent predictions. --no-mlm skips this.
"""

import argparse
import collections
import json
import pathlib
import time

import keras
import numpy as np

from kbert import BertBackbone, BertPretrainer, mean_pool
from kbert.data import SentenceBatches, read_sentence_tsv
from kbert.paths import data_dir
from kbert.saving import model_source
from kbert.text import load_hf_tokenizer
from kbert.training.atomic_backup_and_restore import AtomicBackupAndRestore
from kbert.training.resume_policy import backup_folder

FEATURES = ("pooled", "cls", "mean")
VALIDATION_FRACTION = 0.1  # the task apps' --validation-fraction default


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("backbones", nargs="+", help="backbone folders or presets, as `--init` of the apps takes them")
    parser.add_argument("--data", help="a sentence<TAB>label TSV (default: sst2/train.tsv under $KBERT_DATA_DIR "
                                       "or ../shared/data; skipped with a message when absent)")
    parser.add_argument("--train", type=int, default=2000, help="probe-train sentences (default %(default)s)")
    parser.add_argument("--test", type=int, default=1000,
                        help="test sentences, from the held-out part (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the split and the subsets (default %(default)s)")
    parser.add_argument("--max-length", type=int, default=128,
                        help="tokens per sentence, special tokens included; at most the positions a backbone has "
                             "(default %(default)s)")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences per forward pass (default %(default)s)")
    parser.add_argument("--c-grid", type=float, nargs="+", default=[0.01, 0.1, 1.0],
                        help="inverse L2 regularisation strengths the cross-validation picks from "
                             "(default %(default)s)")
    parser.add_argument("--no-mlm", action="store_true", help="skip the MLM head of pretraining run folders")
    parser.add_argument("--mlm-seq-len", type=int,
                        help="tokens per row of the held-out MLM evaluation (default: the run's --seq-len, "
                             "from its metrics.json; 128 if not recorded)")
    return parser.parse_args(argv)


def probe_sentences(path, train_size, test_size, seed):
    """(probe-train, test) `SentenceExamples`: disjoint, seeded, split as the task apps split."""
    data = read_sentence_tsv(path)
    train, held_out = data.split(VALIDATION_FRACTION, seed)
    if train_size > len(train) or test_size > len(held_out):
        raise SystemExit(f"{path}: {len(train)} training and {len(held_out)} held-out sentences; "
                         f"asked for --train {train_size} and --test {test_size}.")
    return train.shuffled(seed, train_size), held_out.shuffled(seed + 1, test_size)


def feature_model(backbone):
    """A model from the backbone's inputs to its sentence features (`FEATURES`; no "pooled" without a pooler)."""
    inputs = backbone.input
    out = backbone(inputs)
    sequence = out["sequence_output"]
    pooled = {"pooled": out["pooled_output"]} if "pooled_output" in out else {}
    return keras.Model(inputs, {**pooled, "cls": sequence[:, 0, :],
                                "mean": mean_pool(sequence, inputs["padding_mask"], normalize=False)})


def features(model, tokenizer, examples, max_length, batch_size):
    """{feature name: (sentences, hidden) float64 array}, in inference mode."""
    batches = SentenceBatches(examples, tokenizer, batch_size, max_length)  # each cut to its longest row
    parts = [model.predict_on_batch(batches[i][0]) for i in range(len(batches))]
    return {k: np.concatenate([np.asarray(part[k], "float64") for part in parts]) for k in FEATURES if k in parts[0]}


def geometry(x):
    """(effective rank, top principal component's share of variance, mean cosine of distinct pairs)."""
    centered = x - x.mean(0)
    variance = np.linalg.svd(centered, compute_uv=False) ** 2
    p = variance / variance.sum()
    p = p[p > 0]
    effective_rank = float(np.exp(-(p * np.log(p)).sum()))
    unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    cosines = unit @ unit.T
    n = len(x)
    mean_cosine = float((cosines.sum() - np.trace(cosines)) / (n * (n - 1)))
    return effective_rank, float(p[0]), mean_cosine


def linear_probe(x_train, y_train, x_test, y_test, c_grid):
    """(test accuracy, chosen C, its cross-validation accuracy): C chosen by 3-fold CV on the train part."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    search = GridSearchCV(make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000)),
                          {"logisticregression__C": list(c_grid)}, cv=3)  # stratified folds; a tie goes to the first C
    search.fit(x_train, y_train)
    return (float(search.score(x_test, y_test)), search.best_params_["logisticregression__C"],
            float(search.best_score_))


def run_metrics(folder):
    """The metrics.json apps/pretrain.py wrote in `folder` ({} if there is none)."""
    path = pathlib.Path(folder) / "metrics.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def load_pretrainer(folder, backbone, metrics):
    """(`BertPretrainer` with the last backup's heads, `metrics`' last held-out metrics, the backup file),
    or (None, reason, None)."""
    from kbert.optimizers import bert_adamw

    folder = pathlib.Path(folder)
    checkpoint = AtomicBackupAndRestore(backup_folder(folder)).weights_file()
    missing = [name for name, there in (("backup", checkpoint), ("settings.json", (folder / "settings.json").is_file()))
               if not there]
    if missing:
        return None, (f"no {' or '.join(missing)} for {folder} (a --steps 0 run saves no checkpoint; "
                      "other folders are not apps/pretrain.py runs)"), None
    last = metrics.get("end") or metrics.get("start") or {}
    if "rtd_loss" in last:
        return None, f"{folder} is an ELECTRA run: its generator's masked LM is not the backbone's", None
    model = BertPretrainer(backbone, next_sentence="nsp_accuracy" in last or not last)
    # The checkpoint also holds the optimizer state: load it into a built optimizer of the same kind.
    model.compile(optimizer=bert_adamw(1e-4, 1))
    model.optimizer.build(model.trainable_variables)
    model.load_weights(checkpoint)
    return model, last, checkpoint


def held_out_batches(folder, model, tokenizer, seq_len):
    """apps/pretrain.py's held-out MLM evaluation batches (with its default batch size and objective)."""
    from kbert.data.pretraining.dataset import pretraining_dataset
    from kbert.data.pretraining.instances import run_corpus

    paths, holdout = run_corpus(folder)
    data = pretraining_dataset(paths, tokenizer, batch_size=32, holdout=holdout, held_out=True,
                               max_seq_length=seq_len, objective="nsp" if model.next_sentence else "mlm",
                               masking="static", duplication_factor=1, repeat=False, shuffle_buffer=0, seed=1)
    for x, y, weights in data:
        yield {k: np.asarray(v) for k, v in x.items()}, np.asarray(y["mlm"]), np.asarray(weights["mlm"])


def masked_sentence_batches(examples, tokenizer, batch_size, max_length, seed):
    """The sentences, one a row, masked as pretraining masks (15%, at most 20 a row; seeded)."""
    import tensorflow as tf

    from kbert.data.pretraining.dataset import masking_vocabulary
    from kbert.data.pretraining.masking import mask_batch

    special_ids, is_suffix, replacement_ids = masking_vocabulary(tokenizer)
    batches = SentenceBatches(examples, tokenizer, batch_size, max_length)
    for i in range(len(batches)):
        x = batches[i][0]
        masked = mask_batch(x["token_ids"], x["padding_mask"], tf.constant([seed, i]), special_ids, is_suffix,
                            tokenizer.mask_token_id, replacement_ids)
        x = {**x, "token_ids": masked["token_ids"].numpy(), "mask_positions": masked["mask_positions"].numpy()}
        yield x, masked["mask_ids"].numpy(), masked["mask_weights"].numpy()


def mlm_line(model, tokenizer, batches, what, logged=None):
    """One line: the MLM head's accuracy on `batches`, the most-frequent-target guess, its top predictions."""
    predicted, target = [], []
    for x, y, weights in batches:
        logits = model.predict_on_batch(x)["mlm"]
        keep = weights > 0
        predicted.append(np.asarray(logits).argmax(-1)[keep])
        target.append(y[keep])
    predicted, target = np.concatenate(predicted), np.concatenate(target)
    vocabulary = tokenizer.vocabulary()  # every family's tokenizer: its tokens by id
    token = lambda i: repr(vocabulary[int(i)])  # noqa: E731
    common, count = collections.Counter(target.tolist()).most_common(1)[0]
    top = collections.Counter(predicted.tolist()).most_common(4)
    logged = f" (metrics.json {logged:.2%})" if logged is not None else ""
    return (f"    {what}, {len(target):,} masked tokens: accuracy {np.mean(predicted == target):.2%}{logged}; "
            f"always {token(common)} {count / len(target):.2%}; predicts "
            + ", ".join(f"{token(i)} {n / len(predicted):.1%}" for i, n in top))


def main(argv=None):
    args = parse_args(argv)
    start = time.perf_counter()
    path = pathlib.Path(args.data) if args.data else data_dir() / "sst2" / "train.tsv"
    if args.data and not path.is_file():
        raise SystemExit(f"--data {path}: no such file.")
    examples = None
    if path.is_file():
        examples = probe_sentences(path, args.train, args.test, args.seed)
        train, test = examples
        majority = collections.Counter(train.labels.tolist()).most_common(1)[0][0]
        names = train.label_names or []
        majority_name = names[majority] if majority < len(names) else majority
        print(f"{len(train)} probe-train and {len(test)} test sentences of {path} (seed {args.seed}); "
              f"backend {keras.config.backend()}")
        print(f"probe: scikit-learn LogisticRegression on standardized features, C from {args.c_grid} "
              "by 3-fold CV on the probe-train part")
        print(f"majority class ({majority_name!r} in the probe-train part): "
              f"{np.mean(test.labels == majority):.1%} of the test sentences")
    else:
        print(f"{path} not found (set KBERT_DATA_DIR or pass --data): skipping the feature geometry and "
              "the linear probe.")
    for name in args.backbones:
        source = model_source(name)  # any family's folder: its backbone and its kind of tokenizer
        backbone = BertBackbone.from_preset(source)
        tokenizer = source.load_tokenizer(load_hf_tokenizer, backbone)
        max_length = min(args.max_length, backbone.max_sequence_length)  # the positions it has learned
        print(f"\n{name}: {backbone.num_layers} layers, hidden {backbone.hidden_dim}, "
              f"vocabulary {backbone.vocabulary_size:,}, sentences cut to {max_length} tokens")
        if examples:
            model = feature_model(backbone)
            train_features, test_features = (features(model, tokenizer, part, max_length, args.batch_size)
                                             for part in examples)
            print(f"  {'feature':8} {'eff.rank':>8} {'top PC':>7} {'mean cos':>8} {'probe':>7}   C (CV acc)")
            for feature in test_features:
                rank, top, cosine = geometry(test_features[feature])
                accuracy, c, cv = linear_probe(train_features[feature], train.labels,
                                               test_features[feature], test.labels, args.c_grid)
                print(f"  {feature:8} {rank:8.1f} {top:7.1%} {cosine:8.3f} {accuracy:7.1%}   {c:g} ({cv:.1%})",
                      flush=True)
        if not args.no_mlm and pathlib.Path(name).is_dir():
            saved = [keras.ops.convert_to_numpy(v) for v in backbone.weights]
            metrics = run_metrics(name)
            model, last, checkpoint = load_pretrainer(name, backbone, metrics)
            if model is None:
                print(f"  MLM head: not reported, {last}")
                continue
            drift = max(float(np.abs(keras.ops.convert_to_numpy(v) - w).max())
                        for v, w in zip(backbone.weights, saved))
            print(f"  MLM head from {checkpoint} (the backbone there vs backbone.keras: max |diff| {drift:.1e}):")
            seq_len = args.mlm_seq_len or metrics.get("settings", {}).get("seq_len", 128)
            print(mlm_line(model, tokenizer, held_out_batches(name, model, tokenizer, seq_len),
                           "the held-out text", last.get("mlm_accuracy")), flush=True)
            if examples:
                batches = masked_sentence_batches(examples[1], tokenizer, args.batch_size, max_length, args.seed)
                print(mlm_line(model, tokenizer, batches, f"the {len(examples[1])} test sentences"), flush=True)
    print(f"\nWall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()

"""One training batch through kbert and Hugging Face: logits, loss and gradients side by side.

Builds `BertClassifier` and `transformers.BertForSequenceClassification` from the same
all-MiniLM-L6-v2 checkpoint at dropout 0, copies Hugging Face's random head into kbert,
and compares the logits, the loss and the gradients of a few weights on one batch of 8
(padding included). Runs kbert on the torch backend (TensorFlow is never imported).

    .venv/bin/python tools/hf_gradient_check.py
"""

import os

os.environ["KERAS_BACKEND"] = "torch"

import keras  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

from kbert.models.bert_backbone import BertBackbone  # noqa: E402
from kbert.paths import minilm_dir  # noqa: E402
from kbert.tasks.bert_classifier import BertClassifier  # noqa: E402

GRADIENTS = {  # kbert weight path -> Hugging Face parameter (transposed for kernels)
    "token_embedding/embeddings": lambda hf: hf.bert.embeddings.word_embeddings.weight,
    "embeddings_layer_norm/gamma": lambda hf: hf.bert.embeddings.LayerNorm.weight,
    "transformer_layer_5/output_dense/kernel": lambda hf: hf.bert.encoder.layer[5].output.dense.weight,
    "pooled_dense/kernel": lambda hf: hf.bert.pooler.dense.weight,
    "logits/kernel": lambda hf: hf.classifier.weight,
}


def main():
    torch.manual_seed(0)
    hf = transformers.BertForSequenceClassification.from_pretrained(
        minilm_dir(), num_labels=2, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertClassifier(BertBackbone.from_hf(minilm_dir(), dropout=0.0), 2, dropout=0.0)
    model.get_layer("logits").set_weights([hf.classifier.weight.detach().numpy().T,
                                           hf.classifier.bias.detach().numpy()])
    rng = np.random.default_rng(0)
    token_ids = rng.integers(1000, 5000, (8, 16)).astype("int32")
    token_ids[:, 0], token_ids[:, -1] = 101, 102
    padding_mask = np.ones((8, 16), "int32")
    padding_mask[:4, 10:] = 0
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros((8, 16), "int32"), "padding_mask": padding_mask}
    labels = rng.integers(0, 2, 8)

    output = hf(input_ids=torch.tensor(token_ids).long(), token_type_ids=torch.zeros(8, 16).long(),
                attention_mask=torch.tensor(padding_mask).long(), labels=torch.tensor(labels).long())
    output.loss.backward()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    logits = model(inputs, training=True)
    loss = loss_fn(torch.tensor(labels), logits)
    weights = {v.path: v for v in model.trainable_weights}
    grads = torch.autograd.grad(loss, [weights[path].value for path in GRADIENTS])

    print(f"logits  max |diff| {np.abs(logits.detach().numpy() - output.logits.detach().numpy()).max():.2e}")
    print(f"loss    |diff|     {abs(float(loss) - float(output.loss)):.2e}")
    for (path, reference), grad in zip(GRADIENTS.items(), grads):
        expected = reference(hf).grad.numpy()
        expected = expected.T if path.endswith("kernel") else expected
        print(f"grad {path:42s} max |diff| {np.abs(grad.numpy() - expected).max():.2e} "
              f"(max |grad| {np.abs(expected).max():.2e})")


if __name__ == "__main__":
    main()

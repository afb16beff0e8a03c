"""Raw examples for the task API tests, shared with the fresh processes that reload the models."""

import numpy as np

SENTIMENT = (["a gripping film", "dull and long", "great fun", "boring"], ["pos", "neg", "pos", "neg"])
NLI = ((["a man plays", "a man plays", "nobody sleeps", "someone plays"],
        ["someone plays", "nobody plays", "a man sleeps", "a man plays"]), [0, 2, 1, 0])
NER = ([["Ann", "sings"], ["Bob", "Smith", "runs", "fast"], ["Paris", "is", "big"], ["Ann", "Smith"]],
       [["B-PER", "O"], ["B-PER", "I-PER", "O", "O"], ["B-LOC", "O", "O"], ["B-PER", "I-PER"]])
QA = ((["Who sings?", "Who runs?", "Where?", "What is big?"],
       ["Ann sings. " * 6, "Bob runs.", "In Paris.", "Paris is big."]),
      ["Ann", {"text": "Bob", "answer_start": 0}, "Paris", "Paris"])
TEXTS = ["a first text to mask", "and another one", "the third text here", "a fourth one"]

# What predict reads back: raw inputs for the three tasks that decode, token ids for all four.
PREDICT = {"classifier": ["not bad at all", "dull"], "nli": (["a man plays"], ["nobody plays"]),
           "ner": ["Ann Smith sings in Paris.", "Bob runs"],
           "qa": (["Who sings?"], ["Bob runs. Ann sings. " * 8])}


def token_ids(masked=False, length=9):
    """A fixed batch of token ids in MiniLM's vocabulary (with mask positions for the pretrainer)."""
    rng = np.random.default_rng(0)
    batch = {"token_ids": rng.integers(1000, 2000, (2, length)).astype("int32"),
             "segment_ids": np.zeros((2, length), "int32"), "padding_mask": np.ones((2, length), "int32")}
    batch["token_ids"][:, 0], batch["token_ids"][:, -1] = 101, 102
    if masked:
        batch["mask_positions"] = np.array([[1, 2], [3, 4]], "int32")
    return batch

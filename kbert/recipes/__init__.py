"""The fine-tuning recipes the task apps run: train, evaluate and predict over the task models
(`sentence` for apps/sentiment.py, nli.py, similarity.py and multi_label.py; `ner`; `qa`; `embedding` for
apps/embed.py train and evaluate; `distillation` for apps/distill.py), writing run folders."""

from kbert.recipes import distillation, embedding, ner, qa, sentence
from kbert.recipes.ner import EntityF1Callback
from kbert.recipes.sentence import MULTI_LABEL, NLI, SENTIMENT, SIMILARITY, SentenceProblem

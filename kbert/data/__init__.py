"""Readers and batch pipelines for the task data sets."""

from kbert.data.sentence_batches import SentenceBatches
from kbert.data.sentence_examples import SentenceExamples
from kbert.data.sentence_tsv import TsvFormatError, read_sentence_tsv
from kbert.data.text_file import DataFormatError

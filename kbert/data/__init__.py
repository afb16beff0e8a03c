"""The task data sets and their batches: `readers/` (files and tables to examples), `pretraining/` (raw text to
masked batches), `batches/` (tokenized rows served in batches), `windows/` (long texts cut into BERT windows)."""

from kbert.data.batches.sentence import SentenceBatches
from kbert.data.readers.sentence_examples import SentenceExamples
from kbert.data.readers.sentence_tsv import TsvFormatError, read_sentence_tsv
from kbert.data.readers.text_file import DataFormatError

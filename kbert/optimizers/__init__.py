"""BERT's optimizer and learning-rate schedule (below the task models, which compile with them)."""

from kbert.optimizers.bert_adamw import BertAdamW, bert_adamw
from kbert.optimizers.schedules import WarmupLinearDecay

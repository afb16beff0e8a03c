"""How the weights are optimized: BERT's optimizer and learning-rate schedule, LoRA and mixed
precision (below the task models, which compile with them)."""

from kbert.optimizers.bert_adamw import BertAdamW, bert_adamw
from kbert.optimizers.lora import enable_lora
from kbert.optimizers.mixed_precision import mixed_compute
from kbert.optimizers.schedules import WarmupLinearDecay

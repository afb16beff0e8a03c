from kbert.training.curves import plot_history
from kbert.training.optimizers import bert_adamw
from kbert.training.run_folder import atomic_output_folder
from kbert.training.schedules import WarmupLinearDecay

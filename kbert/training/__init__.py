from kbert.training.atomic_backup_and_restore import AtomicBackupAndRestore
from kbert.training.curves import plot_history
from kbert.training.fast_dropout import use_fast_dropout_masks
from kbert.training.mixed_precision import bfloat16_compute
from kbert.training.non_finite_loss import NonFiniteLossError, StopOnNonFiniteLoss
from kbert.training.run_backup import run_backup
from kbert.training.run_results import write_evaluation, write_run_folder
from kbert.training.lora import enable_lora
from kbert.training.sentence_task import NLI, SENTIMENT, SIMILARITY, SentenceTask
from kbert.training import ner_task, qa_task, sentence_task
from kbert.training.ner_task import EntityF1Callback

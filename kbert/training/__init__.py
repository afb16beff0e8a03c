"""What a training run uses besides its model and optimizer: the callbacks of `fit` (resumable
backups, the stop on a non-finite loss, validation scores, logs) and what a finished run writes."""

from kbert.training.atomic_backup_and_restore import AtomicBackupAndRestore
from kbert.training.curves import plot_history
from kbert.training.non_finite_loss import NonFiniteLossError, StopOnNonFiniteLoss
from kbert.training.resume_policy import run_backup
from kbert.training.results import write_evaluation, write_run_folder

"""Saving and loading, below every other layer of kbert: run folders (`run_folder`), the SHA-256 they record of
their files (`checksums`), the one loader of every model source (`model_source`: a preset, a Hugging Face
folder, a kbert folder or `.keras` file; `load_run`) and the Keras files kbert folders hold (`saved_models`)."""

from kbert.saving.run_folder import (BACKBONE_FILE, METRICS_FILE, MODEL_FILE, SETTINGS_FILE, DamagedBackupError,
                                     RunFolderError, SettingsChangedError, atomic_file, atomic_output_folder,
                                     changed_settings, check_replaceable, check_writable, claim_run_folder,
                                     delete_folder, hidden_beside, read_json, reading_run_folder, remove_leftovers,
                                     write_json_atomic)
from kbert.saving.checksums import (CHECKSUMS_FILE, ChangedFileError, check_checksums, record_checksums,
                                    recorded_checksums, sha256)
from kbert.saving.model_source import ModelSource, load_run, model_source
from kbert.saving.saved_models import check_vocabulary, save_backbone

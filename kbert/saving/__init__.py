"""Saving and loading, below every other layer of kbert: run folders (`run_folder`), what a run
starts from and the Keras models kbert folders hold (`saved_models`)."""

from kbert.saving.run_folder import (BACKBONE_FILE, METRICS_FILE, MODEL_FILE, SETTINGS_FILE, RunFolderError,
                                     SettingsChangedError, atomic_file, atomic_output_folder, changed_settings,
                                     check_replaceable, check_writable, claim_run_folder, delete_folder,
                                     hidden_beside, read_json, reading_run_folder, remove_leftovers,
                                     write_json_atomic)
from kbert.saving.saved_models import (PRESET_NAMES, check_vocabulary, is_preset, load_keras_file, load_run,
                                       load_saved_model, load_tokenizer, pretrained_folder, save_backbone)

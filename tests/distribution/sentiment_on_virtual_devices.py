"""apps/sentiment.py train on 8 virtual JAX CPU devices, as its command line runs it; with KILL_AFTER_BACKUP=1
in the environment, the process kills itself (SIGKILL) right after it has written its first run backup.

argv: the app's arguments (`train --data ... --out ... --distribution data`).
"""

import os
import pathlib
import signal
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"  # before jax is imported
os.environ["KERAS_BACKEND"] = "jax"
ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "apps")]

import cli_errors  # noqa: E402
import sentence_cli  # noqa: E402

from kbert.training import AtomicBackupAndRestore  # noqa: E402

if os.environ.get("KILL_AFTER_BACKUP") == "1":
    save = AtomicBackupAndRestore._save_model

    def save_then_die(self, *args, **kwargs):
        save(self, *args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)

    AtomicBackupAndRestore._save_model = save_then_die

if __name__ == "__main__":
    cli_errors.run(lambda args: sentence_cli.main("sentiment", args), sys.argv[1:], prog="sentiment.py")

"""Run by tests/distribution/commands_worker.py for test_torch_app_processes.py and test_jax_app_processes.py: runs a
task app's command (APP: sentiment, nli or similarity through apps/sentence_cli.py's `main`, what apps/sentiment.py
runs; ner or qa through apps/ner.py's or apps/qa.py's `main`) in a folder of its own, and writes what it printed on
stdout to STDOUT_FILE.

argv: WORKDIR STDOUT_FILE APP ARGS...: ARGS are the app's. A torch job's process when MASTER_ADDR, MASTER_PORT, RANK
and WORLD_SIZE are set (as torchrun sets them), else one process. The classifier head's dropout is 0 (and so is
the backbone folder's in the tests that compare): a process drawing its masks for its share of a batch cannot
match one process drawing them for the whole batch, and without dropout the runs must agree.
"""

import contextlib
import importlib
import io
import os
import pathlib
import sys

workdir, stdout_file, app, argv = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
root = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(root), str(root / "apps")]
os.chdir(workdir)  # a relative path the app wrote would land here

import sentence_cli  # noqa: E402

from kbert.tasks.bert_classifier import BertClassifier  # noqa: E402

defaults = list(BertClassifier.__init__.__defaults__)  # (preprocessor, dropout, label_names)
defaults[1] = 0.0
BertClassifier.__init__.__defaults__ = tuple(defaults)

printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    if app in ("ner", "qa"):
        importlib.import_module(app).main(argv)
    else:
        sentence_cli.main(app, argv)
pathlib.Path(stdout_file).write_text(printed.getvalue())

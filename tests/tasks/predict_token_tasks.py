"""Runs the NER and QA apps' predictions on run folders; writes them as JSON (cross-backend tests).

    python tests/tasks/predict_token_tasks.py NER_RUN QA_RUN OUT.json
"""

import importlib.util
import json
import pathlib
import sys

APPS = pathlib.Path(__file__).resolve().parents[2] / "apps"
NER_TEXTS = ["A man plays. Someone sleeps and the man plays", "nobody"]
QA_CONTEXT = "the man plays a film . someone sleeps . nobody is fine and the film is good"
QA_QUESTIONS = ["who plays ?", "who sleeps ?"]


def load_app(name):
    spec = importlib.util.spec_from_file_location(f"{name}_app", APPS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(ner_run, qa_run, out):
    import keras

    results = {"backend": keras.config.backend(),
               "ner": load_app("ner").predict(ner_run, NER_TEXTS),
               "qa": load_app("qa").predict(qa_run, QA_CONTEXT, QA_QUESTIONS)}
    pathlib.Path(out).write_text(json.dumps(results))


if __name__ == "__main__":
    main(*sys.argv[1:])

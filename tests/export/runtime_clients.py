"""Runs a .tflite file in a standard runtime; run by the Python of .venv-edge-clients, not kbert's.

    .venv-edge-clients/bin/python tests/export/runtime_clients.py CLIENT MODEL < inputs.json > outputs.json

CLIENT is one of `CLIENTS`. inputs.json is a list of texts, or for the question answerer of
[question, context] pairs; outputs.json has one entry per input: {label: score} for the
classifiers, the embedding for the embedder, the answers ({text, start, end, logit}) for QA.
Imports tflite-support or mediapipe and the standard library only.
"""

import json
import sys


def task_library_classifier(path, texts):
    from tflite_support.task import text

    classifier = text.BertNLClassifier.create_from_file(path)
    return [{c.category_name: c.score for c in classifier.classify(t).classifications[0].categories}
            for t in texts]


def task_library_question_answerer(path, pairs):
    from tflite_support.task import text

    answerer = text.BertQuestionAnswerer.create_from_file(path)
    return [[{"text": a.text, "start": a.pos.start, "end": a.pos.end, "logit": a.pos.logit}
             for a in answerer.answer(context, question).answers] for question, context in pairs]


def mediapipe_classifier(path, texts):
    from mediapipe.tasks import python as tasks
    from mediapipe.tasks.python import text

    options = text.TextClassifierOptions(base_options=tasks.BaseOptions(model_asset_path=path))
    with text.TextClassifier.create_from_options(options) as classifier:
        return [{c.category_name: c.score for c in classifier.classify(t).classifications[0].categories}
                for t in texts]


def mediapipe_embedder(path, texts):
    from mediapipe.tasks import python as tasks
    from mediapipe.tasks.python import text

    options = text.TextEmbedderOptions(base_options=tasks.BaseOptions(model_asset_path=path))
    with text.TextEmbedder.create_from_options(options) as embedder:
        return [[float(x) for x in embedder.embed(t).embeddings[0].embedding] for t in texts]


CLIENTS = {"task_library_classifier": task_library_classifier,
           "task_library_question_answerer": task_library_question_answerer,
           "mediapipe_classifier": mediapipe_classifier, "mediapipe_embedder": mediapipe_embedder}

if __name__ == "__main__":
    client, path = sys.argv[1:]
    json.dump(CLIENTS[client](path, json.load(sys.stdin)), sys.stdout)

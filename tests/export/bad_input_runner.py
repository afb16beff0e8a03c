"""Runs one runtime on inputs one at a time and says, per input, what it gave or raised.

    PYTHON tests/export/bad_input_runner.py RUNTIME MODEL < inputs.json

RUNTIME is `litert` (kbert_edge's `EdgeModel` on token_ids.tflite or text.tflite, run by kbert's
Python) or a client of `runtime_clients.CLIENTS` (run by the Python of .venv-edge-clients).
inputs.json is a list; each item is a text, or for question answering a [question, context]
pair, where a text is a JSON string (lone surrogates included) or {"bytes": HEX} for bytes.
Prints one JSON line before each input ({"start": i}) and one after it ({"output": ...} or
{"error": "Type: message"}), so that a process the runtime crashed shows which input did it.
Imports the standard library, numpy, and kbert_edge or the client's package only.
"""

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]  # runtime_clients.py; the repository's kbert_core, kbert_edge


def decode(item):
    if isinstance(item, list):
        return [decode(part) for part in item]
    return bytes.fromhex(item["bytes"]) if isinstance(item, dict) else item


def litert(path):
    from kbert_edge import EdgeModel

    model = EdgeModel(path)
    if model.model_kind == "question_answerer":
        return lambda pair: model.answer_question(*pair)
    return lambda text: model.predict([text])[0]


def client(name, path):
    from runtime_clients import CLIENTS

    if name == "task_library_question_answerer":
        return lambda pair: CLIENTS[name](path, [pair])[0]
    return lambda text: CLIENTS[name](path, [text])[0]


def summary(value):
    """The output without the input echoed back (a 1 MB text), JSON-safe."""
    if isinstance(value, dict):
        return {key: summary(item) for key, item in value.items() if key != "text" or len(str(item)) < 200}
    if isinstance(value, list):
        return [summary(item) for item in value]
    return value if isinstance(value, (int, float, str, bool, type(None))) else repr(value)


if __name__ == "__main__":
    runtime, path = sys.argv[1:]
    call = litert(path) if runtime == "litert" else client(runtime, path)
    for i, item in enumerate(json.load(sys.stdin)):
        print(json.dumps({"start": i}), flush=True)
        try:
            result = {"output": summary(call(decode(item)))}
        except Exception as error:  # what the runtime raises is what the test records
            result = {"error": f"{type(error).__name__}: {str(error)[:300]}"}
        print(json.dumps(result), flush=True)

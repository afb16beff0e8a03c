"""apps/serve.py as a user runs it: a process of its own (`--port 0 --ready-file F`), its flags, its answers, its
token, its address, and what it does with slow clients, clients that leave, and a SIGKILL under load."""

import concurrent.futures
import hashlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import keras
import pytest

from tests.conftest import APPS
from tests.export.conftest import WITHOUT_FRAMEWORKS
from tests.serving.test_served_model import LABELS, export_tflite, write_classifier_run

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch",
                                reason="starts servers under KERAS_BACKEND: runs under one backend")

SERVE = APPS / "serve.py"
TOKEN = "a-secret"
TIMEOUT = 2.0  # --timeout of the shared server: seconds a client has for its headers, then for its body
TEXTS = ["The film was good!", "a bad film", ""]


class Server:
    """apps/serve.py MODEL FLAGS in a process of its own, started in `cwd` (with Python's arguments `prefix` before
    the script's path), once it listens on `port`; its output goes to `logs`/server.log."""

    def __init__(self, model, *flags, cwd, logs, env=None, prefix=()):
        logs.mkdir(parents=True, exist_ok=True)
        ready, self.log = logs / "port", logs / "server.log"
        command = [sys.executable, *prefix, str(SERVE), str(model), "--port", "0", "--ready-file", str(ready), *flags]
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(command, cwd=cwd, env=env or server_env(), stdout=log,
                                            stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        while not (ready.is_file() and ready.read_text().strip()):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"apps/serve.py did not start:\n{self.log.read_text()[-4000:]}")
            time.sleep(0.05)
        self.port = int(ready.read_text())

    def request(self, method, path, body=None, token=None, timeout=60):
        """`(status, JSON body, headers)` of one request; `body` is sent as JSON."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        connection.request(method, path, None if body is None else json.dumps(body), headers)
        response = connection.getresponse()
        found = response.status, json.loads(response.read() or "null"), dict(response.getheaders())
        connection.close()
        return found

    def connect(self):
        return socket.create_connection(("127.0.0.1", self.port), timeout=30)

    def stop(self, sig=signal.SIGINT):
        """Stops the server with `sig` (by default as Ctrl+C does) and returns its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout=60)


def server_env(**changes):
    env = {key: value for key, value in os.environ.items() if key != "KBERT_SERVE_TOKEN"}
    return {**env, "PYTHONDONTWRITEBYTECODE": "1", **changes}


def serve(*args, env=None):
    """apps/serve.py ARGS run to its end."""
    return subprocess.run([sys.executable, str(SERVE), *map(str, args)], capture_output=True, text=True,
                          env=env or server_env(), timeout=300)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A folder holding a classifier's run folder, `sst2`."""
    root = tmp_path_factory.mktemp("runs")
    write_classifier_run(root / "sst2")
    return root


@pytest.fixture(scope="module")
def exporting(runs, tmp_path_factory):
    """The run's TFLite export, started (`export_tflite`): a function that waits for it and returns its folder."""
    finished = export_tflite(runs / "sst2", tmp_path_factory.mktemp("exports") / "sst2_tflite")
    yield finished
    finished()  # not left running when no test asked for it


@pytest.fixture(scope="module")
def server(runs, exporting, tmp_path_factory):
    """One server of the classifier run for the tests that do not stop it: its token from KBERT_SERVE_TOKEN. (It
    asks for `exporting` so that the export runs while the server starts.)"""
    started = Server(runs / "sst2", "--timeout", str(TIMEOUT), cwd=tmp_path_factory.mktemp("cwd"),
                     logs=tmp_path_factory.mktemp("logs"), env=server_env(KBERT_SERVE_TOKEN=TOKEN))
    yield started
    assert started.stop() == 0, started.log.read_text()[-4000:]
    assert "Traceback" not in started.log.read_text(), started.log.read_text()[-4000:]  # clients that left too


def test_help():
    result = serve("--help", env=server_env(KBERT_SERVE_TOKEN=TOKEN))
    assert result.returncode == 0 and result.stdout.startswith("usage: serve.py"), result.stderr
    text = " ".join(result.stdout.split())  # lines as argparse wrapped them, joined
    for words in ("--max-batch-size MAX_BATCH_SIZE most items (texts, pairs, questions) joined into one model call "
                  "(1: no batching) (default: 64)",
                  "(default: $KBERT_SERVE_TOKEN)", "TFLite export folder",
                  "--pack, --no-pack Keras classifiers and sentence encoders: a call's texts end to end in packed"):
        assert words in text
    assert "--ready-file" not in result.stdout and TOKEN not in result.stdout  # the token's default is not shown


@pytest.mark.parametrize("flags, message", [
    (["--max-batch-size", "0"], "--max-batch-size must be at least 1, got 0."),
    (["--max-wait-ms", "-1"], "--max-wait-ms must be at least 0, got -1."),
    (["--predict-batch-size", "0"], "--predict-batch-size must be at least 1, got 0."),
    (["--max-queue", "0"], "--max-queue must be at least 1, got 0."),
    (["--max-items", "0"], "--max-items must be at least 1, got 0."),
    (["--max-text-chars", "0"], "--max-text-chars must be at least 1, got 0."),
    (["--max-body-mb", "0"], "--max-body-mb must be at least 0.001, got 0."),
    (["--timeout", "0"], "--timeout must be at least 0.001, got 0."),
    ([], "does not exist."),  # the model, once the flags are right
])
def test_bad_flags_are_one_line_before_loading(tmp_path, flags, message):
    result = serve(tmp_path / "missing.tflite", *flags)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("serve.py: error: ") and result.stderr.strip().endswith(message), result.stderr
    assert result.stderr.startswith(f"serve.py: error: {message if flags else tmp_path}"), result.stderr


def test_a_flag_that_does_not_parse():
    result = serve("sst2", "--port", "eighty")
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == "serve.py: error: argument --port: invalid int value: 'eighty'"


def test_the_server_answers_as_the_apps_predict(server, runs):
    from kbert.recipes import sentence

    expected = json.loads(json.dumps(sentence.predict(runs / "sst2", TEXTS)))
    status, body, _ = server.request("POST", "/v1/predict", {"texts": TEXTS}, token=TOKEN)
    assert (status, body) == (200, {"predictions": expected})
    status, body, _ = server.request("POST", "/v1/models/sst2:predict", {"instances": TEXTS}, token=TOKEN)
    assert (status, body) == (200, {"predictions": expected})
    status, body, _ = server.request("GET", "/v1/model", token=TOKEN)
    assert (body["kind"], body["label_names"], body["runtime"]) == ("classifier", LABELS, "keras (torch)")


def test_the_token(server):
    """Every route but / and /health needs the token (here from KBERT_SERVE_TOKEN): 401 without it or wrong."""
    for token, status, error in [(None, 401, "A bearer token is required: send 'Authorization: Bearer <token>'."),
                                 ("wrong", 401, "The bearer token is wrong."), (TOKEN, 200, None)]:
        found, body, headers = server.request("POST", "/v1/predict", {"texts": ["a film"]}, token=token)
        assert found == status and (body.get("error") == error if error else "predictions" in body), body
        assert (headers.get("www-authenticate") == "Bearer") == (status == 401)
    assert server.request("GET", "/metrics")[0] == 401 and server.request("GET", "/v1/model")[0] == 401
    assert server.request("GET", "/health")[:2] == (200, {"status": "ok", "model": "sst2"})
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("GET", "/")
    assert connection.getresponse().status == 200


def test_bound_to_the_loopback_address_by_default(server):
    """The listening socket's address (the kernel's table of this machine's TCP sockets) is 127.0.0.1."""
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in open(table).read().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, port = local.split(":")
            if int(port, 16) == server.port and state == "0A":  # LISTEN
                listening.append(address)
    assert listening == ["0100007F"]  # 127.0.0.1, little-endian hex
    assert f"at http://127.0.0.1:{server.port}/" in server.log.read_text()


def test_a_slow_client_gets_408_while_another_is_answered(server):
    """Headers not in within --timeout: 408 and the connection closed; a body too slow: 408 as JSON. Meanwhile
    other clients are answered."""
    headers_slow, body_slow = server.connect(), server.connect()
    headers_slow.sendall(b"POST /v1/predict HTTP/1.1\r\nHost: x\r\n")  # ... and never the end of its headers
    body_slow.sendall(b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Authorization: Bearer " + TOKEN.encode() + b"\r\nContent-Length: 30\r\n\r\n{\"texts\": ")
    started = time.monotonic()
    assert server.request("POST", "/v1/predict", {"texts": ["a film"]}, token=TOKEN)[0] == 200
    answered = time.monotonic() - started
    for client in (headers_slow, body_slow):
        reply = read_all(client)
        assert reply.startswith(b"HTTP/1.1 408 "), reply
        assert b"took over 2 s to arrive." in reply, reply
    assert answered < TIMEOUT and time.monotonic() - started < TIMEOUT + 5  # a bounded wait


def read_all(client):
    """What the server sends on `client` until it closes it (the socket's timeout bounds the wait)."""
    chunks = []
    while chunk := client.recv(65536):
        chunks.append(chunk)
    client.close()
    return b"".join(chunks)


def test_clients_that_leave_mid_request(server):
    """A client that closes after half its body, and one that closes while its answer is computed: the server
    answers the next request."""
    body = json.dumps({"texts": ["a long film " * 20] * 200}).encode()
    head = (b"POST /v1/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer "
            + TOKEN.encode() + b"\r\nContent-Length: %d\r\n\r\n" % len(body))
    for sent, waited in ((head + body[: len(body) // 2], 0), (head + body, 0.1)):
        client = server.connect()
        client.sendall(sent)
        time.sleep(waited)  # the whole request sent: the server reads it and starts on its 200 texts
        client.close()
        status, found, _ = server.request("POST", "/v1/predict", {"texts": ["a film"]}, token=TOKEN)
        assert status == 200 and found["predictions"][0]["text"] == "a film"
    assert server.process.poll() is None


def hashes(*folders):
    """The SHA-256 of every file under `folders`, by path (and every folder, empty or not)."""
    found = {}
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "folder"
    return found


def test_killed_under_load_then_started_again(runs, tmp_path):
    """SIGKILL while 16 clients send requests; started again on the same model it answers, and no file of the
    model's folder or the server's working folder changed. The token comes from --token here."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("the server's working folder")
    before = hashes(runs / "sst2", work)
    server = Server(runs / "sst2", "--token", TOKEN, "--max-batch-size", "8", cwd=work, logs=tmp_path / "logs")
    assert server.request("POST", "/v1/predict", {"texts": ["a film"]})[0] == 401
    answered, stop = [], threading.Event()

    def client(i):
        while not stop.is_set():
            try:
                status, _, _ = server.request("POST", "/v1/predict", {"texts": [f"a film {i}", "a bad film"]},
                                              token=TOKEN, timeout=10)
            except (OSError, http.client.HTTPException):  # the server is gone (mid-answer: IncompleteRead)
                return
            answered.append(status)

    with concurrent.futures.ThreadPoolExecutor(16) as clients:
        running = [clients.submit(client, i) for i in range(16)]
        while len(answered) < 32 and server.process.poll() is None:
            time.sleep(0.01)
        assert server.stop(signal.SIGKILL) == -signal.SIGKILL, server.log.read_text()[-4000:]
        stop.set()
        for future in running:
            future.result()
    assert set(answered) == {200}
    again = Server(runs / "sst2", cwd=work, logs=tmp_path / "logs_again")
    status, body, _ = again.request("POST", "/v1/predict", {"texts": ["a film"]})
    assert status == 200 and body["predictions"][0]["label"] in LABELS
    assert again.stop() == 0
    assert hashes(runs / "sst2", work) == before


def test_serving_a_tflite_export_loads_no_keras(exporting, tmp_path):
    """The TFLite export of the run, served in a process where importing Keras or TensorFlow fails (and that
    checks on exit that neither was imported): `/v1/model` says LiteRT, and it answers as `EdgeModel`."""
    from kbert_edge import EdgeModel

    exported = exporting()
    server = Server(exported, cwd=tmp_path, logs=tmp_path / "logs", prefix=("-c", WITHOUT_FRAMEWORKS))
    status, body, _ = server.request("GET", "/v1/model")
    assert (status, body["runtime"], body["kind"], body["name"]) == (200, "litert", "classifier", "sst2_tflite")
    status, body, _ = server.request("POST", "/v1/predict", {"texts": TEXTS})
    expected = EdgeModel(exported / "token_ids.tflite").predict(TEXTS)
    assert (status, body) == (200, {"predictions": json.loads(json.dumps(expected))})
    assert server.stop() == 0, server.log.read_text()[-4000:]  # neither Keras nor TensorFlow was imported
    assert "kbert_edge: " in server.log.read_text()  # the last lines of WITHOUT_FRAMEWORKS: it checked

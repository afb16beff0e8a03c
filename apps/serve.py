"""Serve a kbert model over HTTP: its answers, TF Serving's REST shape, OpenAI's embeddings, a page to try it.

    python apps/serve.py saved_models/sst2                       # http://127.0.0.1:8000/ : the page
    python apps/serve.py exports/sst2_tflite --port 8080         # the TFLite export on LiteRT: no Keras loaded
    KBERT_SERVE_TOKEN=secret python apps/serve.py all_minilm_l6_v2  # embeddings, behind a bearer token
    curl -s localhost:8000/v1/predict -d '{"texts": ["a gripping film"]}'
    curl -s localhost:8000/v1/models/sst2:predict -d '{"instances": ["a gripping film"]}'
    curl -s localhost:8000/v1/embeddings -d '{"input": ["A man plays the guitar."]}'   # sentence encoders

MODEL is what the apps' --model and --init take: a run folder, a task .keras file, a Hugging Face folder (a task
checkpoint with its head, a masked LM's answering fill-mask requests, else sentence embeddings), a backbone folder or
preset; or an export folder of apps/export.py --format tflite (its token_ids.tflite; a .tflite file names one), run
by LiteRT through kbert_edge.

Routes: GET / (the page), /health, /metrics (Prometheus), /v1/model; POST /v1/predict ({"texts": [...]}, with
"pairs" for pair classifiers; QA: {"questions": [...], "contexts": [...]}); TF Serving's POST
/v1/models/NAME:predict ({"instances": [...]} or {"inputs": ...}) and GET /v1/models/NAME[/metadata]; OpenAI's
POST /v1/embeddings for sentence encoders. Answers are the apps' predict answers as JSON.

Concurrent requests are joined into model calls of up to --max-batch-size items (a model just freed waits up to
--max-wait-ms for the texts in flight as it finished), which a Keras model's predict cuts into batches of
--predict-batch-size texts of similar length; past --max-queue waiting items a request gets 503 with Retry-After.
The server listens on 127.0.0.1 unless --host says otherwise; with --token (or KBERT_SERVE_TOKEN)
every route but / and /health needs 'Authorization: Bearer TOKEN'. Keras models run under KERAS_BACKEND.
"""

import argparse
import os
import sys

from app_cli import app_parser, start_quietly


def parser():
    """The argparse parser of this app; its defaults are kbert_serving's."""
    from kbert_serving import BatchSettings, InputLimits, ServerSettings
    from kbert_serving.served_model import PREDICT_BATCH_SIZE

    batching, limits, server = BatchSettings(), InputLimits(), ServerSettings()
    parser = app_parser(__doc__)
    parser.add_argument("model", help="run folder, .keras file, Hugging Face folder, preset, or TFLite export folder")
    parser.add_argument("--name", help="the model's name in routes and answers (default: the folder's name)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (0: any free port)")
    parser.add_argument("--token", default=os.environ.get("KBERT_SERVE_TOKEN"),
                        help="bearer token required on every route but / and /health (default: $KBERT_SERVE_TOKEN)")
    parser.add_argument("--max-batch-size", type=int, default=batching.max_batch_size,
                        help="most items (texts, pairs, questions) joined into one model call (1: no batching)")
    parser.add_argument("--max-wait-ms", type=float, default=batching.max_wait_ms,
                        help="longest a model just freed waits for the texts in flight as it finished")
    parser.add_argument("--predict-batch-size", type=int, default=PREDICT_BATCH_SIZE,
                        help="Keras models: rows of each batch predict cuts a call into, texts of similar length")
    parser.add_argument("--pack", action=argparse.BooleanOptionalAction,
                        help="Keras classifiers and sentence encoders: a call's texts end to end in packed rows, each "
                             "attending only to its own tokens (almost no padding: 64 random SST-2 sentences, 896 "
                             "tokens computed against 1,472 in padded batches of 16); --no-pack: padded batches "
                             "(default: packed under torch, padded under TensorFlow and JAX, which run packed rows "
                             "eagerly)")
    parser.add_argument("--max-queue", type=int, default=batching.max_queue,
                        help="most items waiting; past it: 503, Retry-After")
    parser.add_argument("--max-items", type=int, default=limits.max_items,
                        help="most texts (or pairs, questions) in one request")
    parser.add_argument("--max-text-chars", type=int, default=limits.max_text_chars,
                        help="most characters in one text")
    parser.add_argument("--max-body-mb", type=float, default=server.max_body_bytes / 2 ** 20,
                        help="largest request body, in MB")
    parser.add_argument("--timeout", type=float, default=server.body_timeout,
                        help="seconds a client has to send a request's headers, and then its body")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"),
                        help="Keras models: compute in bfloat16 on CPUs with bfloat16 units")
    parser.add_argument("--threads", type=int, help="TFLite models: the interpreter's CPU threads (default: one)")
    parser.add_argument("--no-verify", action="store_true",
                        help="load a run folder without checking its files against its SHA256SUMS")
    parser.add_argument("--ready-file", help=argparse.SUPPRESS)  # tests and scripts: the port, once it listens
    return parser


def main(argv=None):
    args = parser().parse_args(argv)
    if args.verbose:
        os.environ["KBERT_VERBOSE"] = "1"
    from kbert_serving import BatchSettings, InputLimits, ServerSettings, load_served_model, serve
    from kbert_serving.served_model import tflite_file
    from kbert_core.start_up import start_up_lines_held

    for flag, low in (("max_batch_size", 1), ("max_wait_ms", 0), ("predict_batch_size", 1), ("max_queue", 1),
                      ("max_items", 1), ("max_text_chars", 1), ("max_body_mb", 0.001), ("timeout", 0.001)):
        if getattr(args, flag) < low:
            sys.exit(f"--{flag.replace('_', '-')} must be at least {low:g}, got {getattr(args, flag):g}.")
    batching = BatchSettings(args.max_batch_size, args.max_wait_ms, args.max_queue)
    limits = InputLimits(args.max_items, args.max_text_chars)
    if tflite_file(args.model) is None and not args.verbose:
        start_quietly()  # Keras and TensorFlow without their start-up lines
    with start_up_lines_held():  # what LiteRT and TensorFlow print as they load (--verbose: shown)
        model = load_served_model(args.model, args.name, args.dtype, args.predict_batch_size, args.threads,
                                  verify=not args.no_verify, pack=args.pack)
    settings = ServerSettings(args.token, int(args.max_body_mb * 2 ** 20), args.timeout, limits)

    def ready(port):
        where = f"http://{args.host}:{port}/"
        print(f"Serving {model.name} ({model.kind}, {model.runtime}) at {where}  (Ctrl+C stops)", file=sys.stderr)
        if args.ready_file:
            with open(args.ready_file, "w") as file:
                file.write(str(port))

    serve(model, args.host, args.port, batching, settings, header_timeout=args.timeout,
          log_level="debug" if args.verbose else "warning", on_ready=ready)


if __name__ == "__main__":
    from cli_errors import run

    run(main)

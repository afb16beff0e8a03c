"""An HTTP server for one kbert model: its answers, TF Serving's REST shape, OpenAI's embeddings, a page, metrics.

`make_app(served_model)` is a Starlette (ASGI) application; `serve(...)` runs it under uvicorn on 127.0.0.1
unless told another host. Every request's items go through one `DynamicBatcher`.

| route | what |
|---|---|
| `GET /` | a page to try the model (type text; bars, entities, answers, a similarity matrix) |
| `GET /health` | `{"status": "ok"}` once the model is loaded |
| `GET /metrics` | Prometheus's text format (`RequestMetrics`) |
| `GET /v1/model` | the model's kind, labels, inputs, runtime, batching |
| `POST /v1/predict` | `{"texts": [...]}` (`"pairs"`; QA `"questions"`, `"contexts"`) -> `{"predictions": [...]}` |
| `POST /v1/zero-shot-classification` | an NLI classifier: `{"inputs", "parameters": {"candidate_labels"}}`, as HF |
| `POST /v1/rerank` | a cross-encoder (regressor of pairs), Cohere's: `{"query", "documents"}` -> `{"results"}` |
| `POST /v1/models/NAME:predict` | TF Serving: `{"instances"}` -> `{"predictions"}`, `{"inputs"}` -> `{"outputs"}` |
| `GET /v1/models/NAME`, `.../metadata` | TF Serving's model status and metadata |
| `POST /v1/embeddings` | OpenAI's shape, sentence encoders: `{"input": str or [str]}` -> `{"data": [{"embedding"}]}` |

Errors are JSON, `{"error": "one line"}` (OpenAI's route: `{"error": {"message", "type"}}`), with 400 for what
cannot be read, 401 without the token set, 404, 405, 408 for a client too slow, 413 past a limit, 503 with
`Retry-After` when the queue is full.
"""

import asyncio
import base64
import contextlib
import dataclasses
import hmac
import json
import pathlib
import time

import numpy as np
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.routing import Route

from kbert_core.classification import best_first
from kbert_serving.batcher import BatchSettings, DynamicBatcher, QueueFull
from kbert_serving.request_metrics import CONTENT_TYPE, RequestMetrics
from kbert_serving.served_model import (HypothesisPair, InputLimits, RequestError, json_line, rerank_request,
                                       strings)

PAGE = pathlib.Path(__file__).with_name("page.html")
OPEN_ROUTES = ("/", "/health")  # answered without the token: the page asks for it, and health checks have none
TIMING = "kbert.timing"  # the scope's key of a request's `DynamicBatcher.submit` timing


@dataclasses.dataclass(frozen=True)
class ServerSettings:
    """What a server allows, besides batching.

    Args:
        token: str or None. A bearer token every route but `OPEN_ROUTES` requires (`Authorization: Bearer ...`).
        max_body_bytes: int. Largest request body read.
        body_timeout: float. Seconds a client has to send a body.
        limits: `InputLimits`. Items per request and characters per text.
        retry_after: int. Seconds a refused client is told to wait (503's `Retry-After`).
    """

    token: str | None = None
    max_body_bytes: int = 4 * 1024 * 1024
    body_timeout: float = 10.0
    limits: InputLimits = InputLimits()
    retry_after: int = 1


class _Refused(Exception):
    """A request answered with an error: status, message, headers."""

    def __init__(self, status, message, headers=None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


def make_app(model, batching=BatchSettings(), settings=ServerSettings()):
    """The ASGI application serving `model` (a `ServedModel`).

    Example:
    >>> from starlette.testclient import TestClient
    >>> from kbert_serving.served_model import load_served_model
    >>> with TestClient(make_app(load_served_model("bert_tiny"))) as client:
    ...     response = client.post("/v1/predict", json={"texts": ["a film"]})
    >>> response.status_code, len(response.json()["predictions"][0]["embedding"])
    (200, 128)
    """
    metrics = RequestMetrics(batching.max_batch_size)
    batcher = DynamicBatcher(model.answer, batching, on_batch=metrics.observe_batch, executor=model.thread)

    async def answers(request, items):
        """The answers to `items`; their texts leave the queue if the client goes away first (the watch on the
        connection cancels this task's wait, rather than a task of its own racing it). Where their time went is
        left in the request's scope, for its `Server-Timing` header (`_Guarded`)."""
        task, waiting = asyncio.current_task(), [True]

        def left(watch):
            if waiting[0] and not watch.cancelled():
                task.cancel()

        gone = asyncio.ensure_future(_disconnected(request))
        gone.add_done_callback(left)
        try:
            return await batcher.submit(items, request.scope.setdefault(TIMING, {}))
        except asyncio.CancelledError:
            if gone.done() and not gone.cancelled():
                raise ClientDisconnect() from None
            raise
        except ValueError as error:  # more items than the queue ever holds
            raise RequestError(str(error), 413) from None
        except QueueFull as error:
            raise _Refused(503, f"The server is busy: {error} Try again shortly.",
                           {"Retry-After": str(settings.retry_after)}) from None
        finally:
            waiting[0] = False
            gone.cancel()

    async def page(request):
        return Response(PAGE.read_bytes(), media_type="text/html; charset=utf-8")

    async def health(request):
        return _json({"status": "ok", "model": model.name})

    async def metrics_route(request):
        return Response(metrics.exposition(), media_type=CONTENT_TYPE)

    async def model_route(request):
        return _json({**model.metadata, "batching": dataclasses.asdict(batching),
                      "limits": dataclasses.asdict(settings.limits)})

    async def predict(request):
        body = await _read_json(request, settings)
        items = model.items(body, settings.limits)
        return _json({"predictions": await answers(request, items)})

    async def zero_shot(request):
        body = await _read_json(request, settings)
        question, single = model.zero_shot(body, settings.limits)
        logits = await answers(request, [HypothesisPair(*pair) for pair in zip(*question.pairs)])
        found = question.answers(logits)
        return _json(found[0] if single else found)

    async def rerank(request):
        body = await _read_json(request, settings)
        if not model.regression:
            raise RequestError(f"{model.name} is a {model.kind} of classes: /v1/rerank orders documents by the score "
                               "of a regressor on pairs (a cross-encoder).")
        query, documents, top_n, return_documents = rerank_request(body, settings.limits)
        scores = [answer["score"] for answer in await answers(request, [(query, document) for document in documents])]
        return _json({"results": [{"index": int(i), "relevance_score": scores[i],
                                   **({"document": {"text": documents[i]}} if return_documents else {})}
                                  for i in best_first(scores, top_n)]})

    async def tf_serving_predict(request):
        _check_name(request, model)
        body = await _read_json(request, settings)
        if not isinstance(body, dict) or ("instances" in body) == ("inputs" in body):
            raise RequestError('Give "instances" (a list, one per example) or "inputs" (named lists), not both.')
        unknown = sorted(set(body) - {"instances", "inputs", "signature_name"})
        if unknown:
            raise RequestError(f"Unknown field {unknown[0]!r}: TF Serving's predict takes \"instances\" or \"inputs\".")
        if "instances" in body:
            instances = body["instances"]
            if not isinstance(instances, list) or not instances:
                raise RequestError('"instances" must be a non-empty list.')
            if len(instances) > settings.limits.max_items:
                raise RequestError(f'"instances" holds {len(instances):,}; this server takes at most '
                                   f"{settings.limits.max_items:,} a request.", 413)
            items = [model.item_of(instance, i, settings.limits) for i, instance in enumerate(instances)]
            return _json({"predictions": await answers(request, items)})
        inputs = body["inputs"]
        first = model.metadata["inputs"][0]
        items = model.items(inputs if isinstance(inputs, dict) else {first: inputs}, settings.limits)
        return _json({"outputs": await answers(request, items)})

    async def tf_serving_status(request):
        _check_name(request, model)
        return _json({"model_version_status": [{"version": "1", "state": "AVAILABLE",
                                                "status": {"error_code": "OK", "error_message": ""}}]})

    async def tf_serving_metadata(request):
        _check_name(request, model)
        return _json({"model_spec": {"name": model.name, "signature_name": "", "version": "1"},
                      "metadata": {"kbert": model.metadata}})

    async def embeddings(request):
        try:
            body = await _read_json(request, settings)
            if model.kind != "sentence_encoder":
                raise _Refused(400, f"{model.name} is a {model.kind}, not a sentence encoder: /v1/embeddings serves "
                                    "sentence encoders; use /v1/predict.")
            if not isinstance(body, dict) or "input" not in body:
                raise RequestError('The request needs "input": a string or a list of strings.')
            encoding = body.get("encoding_format", "float")
            if encoding not in ("float", "base64"):
                raise RequestError(f'"encoding_format" is "float" or "base64", not {json.dumps(encoding)}.')
            texts = strings(body["input"], "input", settings.limits)
            found = await answers(request, [(text,) for text in texts])
            tokens = int(sum(model.token_counts(texts)))
            data = [{"object": "embedding", "index": i, "embedding": _encoded(answer["embedding"], encoding)}
                    for i, answer in enumerate(found)]
            return _json({"object": "list", "data": data, "model": model.name,
                          "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})
        except (RequestError, _Refused) as error:
            status = getattr(error, "status", 400)
            kind = "invalid_request_error" if status < 500 else "server_error"
            return _json({"error": {"message": str(error), "type": kind}}, status,
                         getattr(error, "headers", None))
        except ClientDisconnect:
            raise
        except Exception as error:  # noqa: BLE001 - OpenAI's clients read error.message
            import traceback

            traceback.print_exc()
            return _json({"error": {"message": f"The model failed on this request: {type(error).__name__}: "
                                               f"{error}", "type": "server_error"}}, 500)

    routes = [Route("/v1/predict", predict, methods=["POST"]),  # first: the router tries them in order
              Route("/v1/zero-shot-classification", zero_shot, methods=["POST"]),
              Route("/v1/rerank", rerank, methods=["POST"]),
              Route("/", page), Route("/health", health), Route("/metrics", metrics_route),
              Route("/v1/model", model_route),
              Route("/v1/models/{name}:predict", tf_serving_predict, methods=["POST"]),
              Route("/v1/models/{name}/metadata", tf_serving_metadata),
              Route("/v1/models/{name}", tf_serving_status),
              Route("/v1/embeddings", embeddings, methods=["POST"])]

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        await batcher.close()

    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={
        HTTPException: _http_error, RequestError: _refusal, _Refused: _refusal, ClientDisconnect: _client_left,
        Exception: _failure})
    return _Guarded(app, settings, metrics, routes)


class _Guarded:
    """The application behind the token check, the error bodies and the metrics of every request; a response to a
    request the model answered says where its time went in a `Server-Timing` header (W3C's; milliseconds): `queue`,
    `model` and `back` (`DynamicBatcher.submit`'s timing) and `app`, from the request's start in this application
    to its response's (what the HTTP server and the network add is the rest of what a client measures)."""

    def __init__(self, app, settings, metrics, routes):
        self.app, self.settings, self.metrics, self.routes = app, settings, metrics, routes
        self.paths = {route.endpoint: route.path for route in routes}  # what Starlette's router puts in the scope
        self.token = None if settings.token is None else f"Bearer {settings.token}".encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        start, status = time.perf_counter(), [500]

        async def sending(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                if scope.get(TIMING):
                    message = {**message, "headers": [*message.get("headers", ()), (b"server-timing", server_timing(
                        {**scope[TIMING], "app": time.perf_counter() - start}))]}
            await send(message)

        try:
            if self.token is not None and scope["path"] not in OPEN_ROUTES:
                given = dict(scope["headers"]).get(b"authorization", b"")
                if not hmac.compare_digest(given, self.token):
                    message = ("A bearer token is required: send 'Authorization: Bearer <token>'." if not given
                               else "The bearer token is wrong.")
                    return await _json({"error": message}, 401, {"WWW-Authenticate": "Bearer"})(scope, receive, sending)
            await self.app(scope, receive, sending)
        except Exception:  # noqa: BLE001 - answered already (`_failure`); the log keeps the traceback
            import traceback

            traceback.print_exc()
        finally:
            self.metrics.observe(self._route(scope), status[0], time.perf_counter() - start)

    def _route(self, scope):
        """The pattern of the route that answered `scope` (read from the endpoint Starlette's router set in it;
        for a request refused before routing, the first route it matches), "other" for none: metrics stay few."""
        from starlette.routing import Match

        if scope.get("endpoint") in self.paths:
            return self.paths[scope["endpoint"]]
        for route in self.routes:
            if route.matches(scope)[0] != Match.NONE:
                return route.path
        return "other"


def server_timing(seconds):
    """A `Server-Timing` header's value of named durations in seconds (in milliseconds, as the header has them).

    Example:
    >>> server_timing({"queue": 0.00012, "model": 0.0103})
    b'queue;dur=0.12, model;dur=10.30'
    """
    return ", ".join(f"{name};dur={1000 * value:.2f}" for name, value in seconds.items()).encode()


async def _refusal(request, error):
    return _json({"error": str(error)}, getattr(error, "status", 400), getattr(error, "headers", None))


async def _client_left(request, error):
    return Response(status_code=499)  # nginx's word for a client that left before its answer: nobody reads it


async def _failure(request, error):
    return _json({"error": f"The model failed on this request: {type(error).__name__}: {error}"}, 500)


async def _http_error(request, error):
    messages = {404: f"No route {request.url.path}: see GET /v1/model and the routes in the README.",
                405: f"{request.method} is not allowed on {request.url.path}."}
    return _json({"error": messages.get(error.status_code, error.detail)}, error.status_code, error.headers)


def _json(content, status=200, headers=None):
    return Response(json_line(content), status, headers, media_type="application/json")


def _check_name(request, model):
    if request.path_params["name"].endswith(":predict"):  # read as a name by the GET routes
        raise _Refused(405, f"{request.method} is not allowed on {request.url.path}: POST it.")
    if request.path_params["name"] != model.name:
        raise _Refused(404, f"No model {request.path_params['name']!r}: this server serves {model.name!r}.")


async def _read_json(request, settings):
    """The request's body as JSON: 413 past `max_body_bytes` (before reading it where it says its length), 408
    when it comes slower than `body_timeout`, 400 when it is not UTF-8 JSON."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > settings.max_body_bytes:
        raise _Refused(413, f"The body is {int(declared):,} bytes; this server reads at most "
                            f"{settings.max_body_bytes:,}.")
    chunks = []

    async def read():
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > settings.max_body_bytes:
                raise _Refused(413, f"The body is over {settings.max_body_bytes:,} bytes, the most this server reads.")
            chunks.append(chunk)

    task, expired = asyncio.current_task(), []  # a timer cancelling this task: wait_for's would add a task, a
    # waiter and two loop iterations to every request, whose body is most often in already

    def expire():
        expired.append(True)
        task.cancel()

    timer = asyncio.get_running_loop().call_later(settings.body_timeout, expire)
    try:
        await read()
    except asyncio.CancelledError:
        if not expired:
            raise
        if hasattr(task, "uncancel"):  # Python 3.11+ counts cancellations: this one was the timer's, now answered
            task.uncancel()
        raise _Refused(408, f"The body took over {settings.body_timeout:g} s to arrive.") from None
    finally:
        timer.cancel()
    body = b"".join(chunks)
    if not body:
        raise RequestError("The request has no body: send JSON (Content-Type: application/json).")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RequestError(f"The body is not UTF-8: byte {error.start} is 0x{body[error.start]:02x}.") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise RequestError(f"The body is not JSON: {error.msg} at line {error.lineno}, column {error.colno}.") \
            from None


async def _disconnected(request):
    """Returns once the client of `request` (its body read) has closed its connection."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _encoded(embedding, encoding):
    """An embedding as OpenAI's `encoding_format` asks: a list of floats, or float32 bytes in base64."""
    if encoding == "float":
        return embedding
    return base64.b64encode(np.asarray(embedding, "<f4").tobytes()).decode()


def serve(model, host="127.0.0.1", port=8000, batching=BatchSettings(), settings=ServerSettings(),
          header_timeout=10.0, log_level="info", on_ready=None):
    """Serves `model` (a `ServedModel`) over HTTP with uvicorn until interrupted.

    A client that has not sent a request's headers `header_timeout` seconds after connecting (or after its last
    answer) gets 408 and its connection closed, so that slow clients hold no connection for long.
    `on_ready(port)` is called once the socket listens (the port chosen when `port` is 0).
    """
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets=None):
            await super().startup(sockets)
            if self.started and on_ready is not None:
                on_ready(self.servers[0].sockets[0].getsockname()[1])

    config = uvicorn.Config(make_app(model, batching, settings), host=host, port=port, log_level=log_level,
                            http=_header_timeout_protocol(header_timeout), access_log=log_level == "debug")
    server = Server(config)
    try:
        server.run()  # on the loop uvicorn picks (uvloop's where it is installed): asyncio.run would take asyncio's
    except KeyboardInterrupt:  # Ctrl+C: uvicorn has shut down, then raised the signal again
        pass
    return server


def _header_timeout_protocol(seconds):
    """uvicorn's HTTP protocol (httptools' parser where it is installed, else h11's), closing with 408 a connection
    whose request headers are not in within `seconds`."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as Protocol
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol as Protocol

    body = json_line({"error": f"The request's headers took over {seconds:g} s to arrive."}).encode()
    response = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(body), body))

    class HeaderTimeoutProtocol(Protocol):
        def connection_made(self, transport):
            super().connection_made(transport)
            self._await_headers()

        def data_received(self, data):
            super().data_received(data)
            if self._headers_timer is not None and not self._between_requests():
                self._headers_timer.cancel()
                self._headers_timer = None

        def on_response_complete(self):
            super().on_response_complete()
            if not self.transport.is_closing():
                self._await_headers()

        def connection_lost(self, exc):
            if self._headers_timer is not None:
                self._headers_timer.cancel()
            super().connection_lost(exc)

        def _between_requests(self):
            return self.cycle is None or self.cycle.response_complete

        def _await_headers(self):
            if getattr(self, "_headers_timer", None) is not None:
                self._headers_timer.cancel()
            self._headers_timer = self.loop.call_later(seconds, self._too_slow)

        def _too_slow(self):
            self._headers_timer = None
            if self._between_requests() and not self.transport.is_closing():
                self.transport.write(response)
                self.transport.close()

    return HeaderTimeoutProtocol

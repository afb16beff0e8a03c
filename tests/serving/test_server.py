"""The ASGI app in-process (starlette's TestClient, or ASGI messages where the test needs the body's pace): each
route's answers against the model's own predict, TF Serving's and OpenAI's shapes, /metrics through Prometheus's
parser, and each fault of issue 53 that needs no socket, each followed by a request that is answered."""

import asyncio
import base64
import contextlib
import dataclasses
import json
import threading
import time

import keras
import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from kbert.paths import minilm_dir
from kbert.recipes import ner, qa
from kbert.tasks.fill_mask import mask_answers
from kbert_serving import BatchSettings, InputLimits, ServedModel, ServerSettings, make_app
from kbert_serving.served_model import json_line

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch", reason="the app is backend-independent: runs once")

TEXTS = ["a film", "the man plays a very good film and nobody sleeps", "", "Ann sings in Rome.", "ok " * 40]
PAIRS = ["someone plays", "a man sleeps", "x", "nobody plays in Paris", "fine"]
QUESTIONS = ["who sings?", "where does Ann sing?", "what is good?"]
CONTEXT = "Ann sings in Rome. The film is good."
GOOD = {  # a request each kind answers, and what it holds
    "classifier": {"texts": ["a good film"]}, "multi_label": {"texts": ["a good film"]},
    "regressor": {"texts": ["a good film"], "pairs": ["a fine film"]}, "token_classifier": {"texts": ["Ann sings."]},
    "question_answerer": {"questions": ["who sings?"], "contexts": ["Ann sings."]},
    "sentence_encoder": {"texts": ["a good film"]}, "masked_lm": {"texts": ["a [MASK] film"]},
    "nli": {"texts": ["a good film"], "pairs": ["a film"]}}


@pytest.fixture(scope="module")
def client_of(served):
    """kind -> a TestClient of an app serving that kind's model, started once for the module (its lifespan runs)."""
    with contextlib.ExitStack() as stack:
        clients = {}

        def client(kind):
            if kind not in clients:
                clients[kind] = stack.enter_context(TestClient(make_app(served[kind])))
            return clients[kind]

        yield client


def answered(client, kind="classifier", headers=None):
    """Asserts that `client`'s server answers a good request of `kind` (after a fault)."""
    response = client.post("/v1/predict", json=GOOD[kind], headers=headers)
    assert response.status_code == 200, response.text
    assert len(response.json()["predictions"]) == 1


def plain(value):
    """`value` as JSON gives it back (tuples as lists, numpy numbers as numbers)."""
    return json.loads(json_line(value))


def assert_close(got, want, where="answers"):
    """`got` equals `want` (nested dicts and lists), floats to float32's precision (rows batched apart)."""
    if isinstance(got, float) or isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-5, abs=2e-6), where
    elif isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), (where, got, want)
        for key in want:
            assert_close(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (where, got, want)
        for i, (mine, theirs) in enumerate(zip(got, want)):
            assert_close(mine, theirs, f"{where}[{i}]")
    else:
        assert got == want, (where, got, want)


def predictions(client, body, path="/v1/predict", key="predictions"):
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()[key]


# Answers: the apps' (the recipes' `answers`, as their `predict` gives them) and the Keras model's own predict


@pytest.mark.parametrize("kind, with_pairs", [("classifier", False), ("classifier", True), ("multi_label", False),
                                              ("regressor", True)],
                         ids=["texts", "pairs", "multi-label", "regressor-pairs"])
def test_classifier_answers_are_the_apps_and_the_models(client_of, served, kind, with_pairs):
    model, pairs = served[kind], PAIRS if with_pairs else None
    got = predictions(client_of(kind), {"texts": TEXTS, **({"pairs": pairs} if pairs else {})})
    assert_close(got, plain(model.model.answers(TEXTS if pairs is None else (TEXTS, pairs))))
    kept = [i for i, text in enumerate(TEXTS) if text]  # the empty text has a note, not a prediction
    outputs = model.model.predict([TEXTS[i] for i in kept] if pairs is None else
                                  ([TEXTS[i] for i in kept], [pairs[i] for i in kept]), verbose=0)
    names = model.label_names
    for i, output in zip(kept, outputs):
        if kind == "regressor":
            assert got[i]["score"] == pytest.approx(float(output), abs=1e-5)
        else:
            assert [got[i]["probabilities"][name] for name in names] == pytest.approx(output.tolist(), abs=2e-6)
            if kind == "multi_label":
                assert got[i]["labels"] == [name for name, p in zip(names, output) if p >= model.model.threshold]
            else:
                assert got[i]["label"] == names[int(np.argmax(output))]
    assert got[2]["label"] is None and got[2]["note"]  # the empty text
    assert "note" in got[4]  # longer than the model reads


def test_token_classifier_answers_are_the_apps(client_of, served):
    got = predictions(client_of("token_classifier"), {"texts": TEXTS})
    assert_close(got, plain(ner.answers(served["token_classifier"].model, TEXTS)))
    entities = [(text, entity) for text, answer in zip(TEXTS, got) for entity in answer["entities"]]
    assert entities and all(text[entity["start"]:entity["end"]] == entity["text"] for text, entity in entities)
    assert {entity["type"] for _, entity in entities} <= {"PER", "LOC"}


def test_question_answerer_answers_are_the_apps(client_of, served):
    got = predictions(client_of("question_answerer"), {"questions": QUESTIONS, "contexts": CONTEXT})  # one context
    assert_close(got, plain(qa.answers(served["question_answerer"].model, QUESTIONS, [CONTEXT] * len(QUESTIONS))))
    assert all(CONTEXT[answer["start"]:answer["end"]] == answer["text"] for answer in got if answer["text"])
    again = predictions(client_of("question_answerer"), {"questions": QUESTIONS, "contexts": [CONTEXT] * 3})
    assert_close(again, got)


def test_sentence_encoder_answers_are_its_embeddings(client_of, served):
    got = predictions(client_of("sentence_encoder"), {"texts": TEXTS})
    assert [answer["text"] for answer in got] == TEXTS
    np.testing.assert_allclose([answer["embedding"] for answer in got], served["sentence_encoder"].model.encode(TEXTS),
                               rtol=1e-5, atol=1e-6)


def test_masked_lm_answers_are_the_apps_and_bad_texts_are_400(client_of, served):
    client, model = client_of("masked_lm"), served["masked_lm"].model
    texts = ["a [MASK] film", "[MASK] sings in [MASK].", "the man plays a very good film and nobody [MASK]"]
    got = predictions(client, {"texts": texts})
    assert_close(got, plain(mask_answers(model, texts, batch_size=2)))
    assert [len(answer["masks"]) for answer in got] == [1, 2, 1] and len(got[0]["masks"][0]) == 5
    assert client.get("/v1/model").json()["mask_token"] == "[MASK]"
    instances = client.post("/v1/models/masked_lm:predict", json={"instances": texts[:1]})
    assert instances.status_code == 200
    assert_close(instances.json()["predictions"], got[:1])
    for body, said in [({"texts": ["a [MASK]", "no mask"]}, "texts[1] ('no mask') has no mask token"),
                       ({"instances": ["x", "no mask"]}, "instances[0].text ('x') has no mask token"),
                       ({"texts": ["word " * 600 + "[MASK]"]}, "texts[0] ('word word"),
                       ]:
        path = "/v1/predict" if "texts" in body else "/v1/models/masked_lm:predict"
        response = client.post(path, json=body)
        assert response.status_code == 400 and said in response.text, response.text
    answered(client, "masked_lm")


# TF Serving's REST shape


ZERO_SHOT = {"inputs": ["a good film", "the man plays a very good film and nobody sleeps"],
             "parameters": {"candidate_labels": ["positive", "negative", "sports"]}}


@pytest.mark.parametrize("parameters", [{}, {"multi_label": True, "hypothesis_template": "The film is {}."}],
                         ids=["one-distribution", "multi-label-template"])
def test_zero_shot_answers_are_the_models_in_hugging_faces_shape(client_of, served, parameters):
    """`POST /v1/zero-shot-classification` answers as `BertClassifier.zero_shot` (Hugging Face's pipeline: tested
    against it in tests/tasks/test_zero_shot.py), a list for a list and one answer for a text alone."""
    model = served["nli"].model
    body = {**ZERO_SHOT, "parameters": {**ZERO_SHOT["parameters"], **parameters}}
    template = parameters.get("hypothesis_template", "This example is {}.")
    want = model.zero_shot(body["inputs"], body["parameters"]["candidate_labels"], template,
                           parameters.get("multi_label", False))
    response = client_of("nli").post("/v1/zero-shot-classification", json=body)
    assert response.status_code == 200, response.text
    assert_close(response.json(), plain(want))
    alone = client_of("nli").post("/v1/zero-shot-classification",
                                  json={**body, "inputs": body["inputs"][0]}).json()
    assert_close(alone, plain(want[0]))


@pytest.mark.parametrize("kind, body, status, words", [
    ("nli", {"texts": ["a film"]}, 400, '"inputs"'),
    ("nli", {"inputs": "a film"}, 400, '"candidate_labels"'),
    ("nli", {"inputs": "a film", "parameters": {"candidate_labels": ["a"], "top_k": 2}}, 400, "'top_k'"),
    ("nli", {"inputs": "a film", "parameters": {"candidate_labels": "a", "multi_label": "yes"}}, 400, "true or false"),
    ("nli", {"inputs": "a film", "parameters": {"candidate_labels": ["a", " "]}}, 400, "candidate_labels[1] is blank"),
    ("nli", {"inputs": "a film", "parameters": {"candidate_labels": "a", "hypothesis_template": "no braces"}}, 400,
     "has no {}"),
    ("nli", {"inputs": ["a film"] * 100, "parameters": {"candidate_labels": list("abc")}}, 413, "300 pairs"),
    ("classifier", {"inputs": "a film", "parameters": {"candidate_labels": ["a"]}}, 400, 'named "entailment"'),
    ("sentence_encoder", {"inputs": "a film", "parameters": {"candidate_labels": ["a"]}}, 400, "is a sentence_encoder"),
], ids=["no-inputs", "no-labels", "unknown-parameter", "multi-label-type", "blank-label", "template", "too-many-pairs",
        "not-nli", "not-classifier"])
def test_zero_shot_refusals_are_named(client_of, kind, body, status, words):
    response = client_of(kind).post("/v1/zero-shot-classification", json=body)
    assert response.status_code == status, response.text
    if words:
        assert words in response.json()["error"]
    answered(client_of(kind), kind)


DOCUMENTS = ["A man plays a guitar.", "Stocks fell.", "The band played all night.", "A cat sleeps."]


def test_rerank_orders_documents_as_the_model_ranks_them_in_cohere_shape(client_of, served):
    """`POST /v1/rerank` answers as `BertClassifier.rank` (Sentence Transformers' `CrossEncoder.rank`: tested
    against it in tests/tasks/test_rank.py): indices best first, `top_n`, the documents when asked (given as strings
    or Cohere's {"text"} objects)."""
    want = served["regressor"].model.rank("Who makes music?", DOCUMENTS)
    assert np.diff([hit["score"] for hit in want]).max() < -1e-5  # gaps far above float32 noise (~1e-7 here)
    documents = [DOCUMENTS[0], *({"text": document} for document in DOCUMENTS[1:])]  # strings or Cohere's objects
    body = {"model": "any", "query": "Who makes music?", "documents": documents}
    results = predictions(client_of("regressor"), body, "/v1/rerank", "results")
    assert [r["index"] for r in results] == [hit["corpus_id"] for hit in want]
    assert [r["relevance_score"] for r in results] == pytest.approx([hit["score"] for hit in want], abs=1e-5)
    top = predictions(client_of("regressor"), {**body, "top_n": 2, "return_documents": True}, "/v1/rerank", "results")
    assert [(r["index"], r["document"]["text"]) for r in top] == [(h["corpus_id"], DOCUMENTS[h["corpus_id"]])
                                                                 for h in want[:2]]


@pytest.mark.parametrize("kind, body, words", [
    ("classifier", {"query": "a", "documents": ["b"]}, "of classes: /v1/rerank"),
    ("regressor", {"query": "a"}, '"documents"'),
    ("regressor", {"query": "a", "documents": ["b"], "rank_fields": ["x"]}, "'rank_fields'"),
    ("regressor", {"query": "a", "documents": ["b", " "]}, "documents[1] is blank"),
    ("regressor", {"query": "a", "documents": ["b"], "top_n": 0}, '"top_n" is a number'),
    ("regressor", {"query": "a", "documents": ["b"], "return_documents": 1}, "true or false"),
], ids=["not-a-regressor", "no-documents", "unknown-field", "blank-document", "top-n", "return-documents"])
def test_rerank_refusals_are_named(client_of, kind, body, words):
    response = client_of(kind).post("/v1/rerank", json=body)
    assert response.status_code == 400 and words in response.json()["error"], response.text
    answered(client_of(kind), kind)


def test_tf_serving_instances_of_strings_and_objects_answer_as_predict(client_of):
    client = client_of("classifier")
    path = "/v1/models/classifier:predict"
    singles = predictions(client, {"texts": TEXTS})
    assert_close(predictions(client, {"instances": TEXTS}, path), singles)
    assert_close(predictions(client, {"instances": [{"text": text} for text in TEXTS], "signature_name": ""}, path),
                 singles)
    pairs = predictions(client, {"texts": TEXTS, "pairs": PAIRS})
    instances = [{"text": text, "pair": pair} for text, pair in zip(TEXTS, PAIRS)]
    assert_close(predictions(client, {"instances": instances}, path), pairs)
    mixed = predictions(client, {"instances": [TEXTS[0], instances[1]]}, path)  # a single and a pair in one request
    assert_close(mixed, [singles[0], pairs[1]])


def test_tf_serving_question_instances(client_of):
    client = client_of("question_answerer")
    columns = predictions(client, {"questions": QUESTIONS, "contexts": CONTEXT})
    instances = [{"question": question, "context": CONTEXT} for question in QUESTIONS]
    assert_close(predictions(client, {"instances": instances}, "/v1/models/question_answerer:predict"), columns)


def test_tf_serving_inputs_are_columns_and_answer_as_outputs(client_of):
    client = client_of("classifier")
    path = "/v1/models/classifier:predict"
    assert_close(predictions(client, {"inputs": {"texts": TEXTS, "pairs": PAIRS}}, path, "outputs"),
                 predictions(client, {"texts": TEXTS, "pairs": PAIRS}))
    assert_close(predictions(client, {"inputs": TEXTS}, path, "outputs"), predictions(client, {"texts": TEXTS}))


def test_tf_serving_status_and_metadata(client_of, served):
    client = client_of("classifier")
    status = client.get("/v1/models/classifier")
    assert status.status_code == 200
    [version] = status.json()["model_version_status"]
    assert version["state"] == "AVAILABLE" and version["status"]["error_code"] == "OK"
    metadata = client.get("/v1/models/classifier/metadata").json()
    assert metadata["model_spec"]["name"] == "classifier"
    assert metadata["metadata"]["kbert"]["kind"] == "classifier"
    assert metadata["metadata"]["kbert"]["label_names"] == served["classifier"].label_names


@pytest.mark.parametrize("method, path", [("GET", "/v1/models/other"), ("GET", "/v1/models/other/metadata"),
                                          ("POST", "/v1/models/other:predict")])
def test_tf_serving_routes_of_another_name_are_404(client_of, method, path):
    client = client_of("classifier")
    response = client.request(method, path, json={"instances": ["a film"]})
    assert response.status_code == 404 and "'other'" in response.json()["error"]
    answered(client)


# OpenAI's embeddings


def minilm_token_count(text, max_length):
    """Tokens of `text` with [CLS] and [SEP], by Hugging Face's tokenizer of the same vocabulary."""
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return min(len(tokenizer.encode(text).ids), max_length)


def test_embeddings_in_openai_shape(client_of, served):
    model, texts = served["sentence_encoder"], TEXTS[:2] + TEXTS[3:]
    response = client_of("sentence_encoder").post("/v1/embeddings", json={"input": texts, "model": "any"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["object"] == "list" and body["model"] == model.name
    assert [item["index"] for item in body["data"]] == list(range(len(texts)))
    assert {item["object"] for item in body["data"]} == {"embedding"}
    np.testing.assert_allclose([item["embedding"] for item in body["data"]], model.model.encode(texts),
                               rtol=1e-5, atol=1e-6)
    tokens = sum(minilm_token_count(text, model.max_length) for text in texts)
    assert body["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens}


def test_embeddings_of_one_string_and_in_base64(client_of):
    client = client_of("sentence_encoder")
    floats = client.post("/v1/embeddings", json={"input": "a good film"}).json()["data"]
    encoded = client.post("/v1/embeddings", json={"input": "a good film", "encoding_format": "base64"}).json()["data"]
    assert len(floats) == len(encoded) == 1 and encoded[0]["index"] == 0
    decoded = np.frombuffer(base64.b64decode(encoded[0]["embedding"]), "<f4")
    np.testing.assert_array_equal(decoded, np.asarray(floats[0]["embedding"], np.float32))


@pytest.mark.parametrize("kind, body, words", [
    ("classifier", {"input": ["a film"]}, "not a sentence encoder"),
    ("sentence_encoder", {"input": ["a film"], "encoding_format": "int8"}, "encoding_format"),
    ("sentence_encoder", {"texts": ["a film"]}, '"input"'),
    ("sentence_encoder", {"input": []}, "empty"),
    ("sentence_encoder", {"input": [3]}, "not a string"),
], ids=["not-an-encoder", "encoding", "no-input", "empty", "number"])
def test_embeddings_errors_are_in_openai_shape(client_of, kind, body, words):
    client = client_of(kind)
    response = client.post("/v1/embeddings", json=body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and words in error["message"]
    answered(client, kind)


# The other routes


def test_health_model_page_and_unknown_routes(client_of, served):
    client = client_of("token_classifier")
    assert client.get("/health").json() == {"status": "ok", "model": "token_classifier"}
    facts = client.get("/v1/model").json()
    assert (facts["kind"], facts["label_names"], facts["inputs"]) == ("token_classifier", served[
        "token_classifier"].label_names, ["texts"])
    assert facts["batching"] == dataclasses.asdict(BatchSettings())
    assert facts["limits"] == dataclasses.asdict(InputLimits())
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    missing = client.get("/v2/nothing")
    assert missing.status_code == 404 and "/v2/nothing" in missing.json()["error"]
    wrong_method = client.get("/v1/predict")
    assert wrong_method.status_code == 405 and "GET" in wrong_method.json()["error"]
    answered(client, "token_classifier")


def metric_samples(client):
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(response.text) for sample in family.samples}


def test_metrics_count_requests_errors_batches_and_the_queue(served):
    with TestClient(make_app(served["classifier"])) as client:
        for texts in (["a film"], ["a film", "Ann sings."], ["a", "b", "c"]):
            assert client.post("/v1/predict", json={"texts": texts}).status_code == 200
        assert client.post("/v1/predict", json={"texts": [1]}).status_code == 400
        assert client.post("/v1/models/classifier:predict", json={"instances": ["a"]}).status_code == 200
        assert client.get("/health").status_code == 200
        assert client.get("/nowhere").status_code == 404
        found = metric_samples(client)

    def value(name, **labels):
        return found.get((name, frozenset(labels.items())))

    assert value("kbert_requests_total", route="/v1/predict", status="200") == 3
    assert value("kbert_requests_total", route="/v1/predict", status="400") == 1
    assert value("kbert_requests_total", route="/v1/models/{name}:predict", status="200") == 1
    assert value("kbert_requests_total", route="/health", status="200") == 1
    assert value("kbert_requests_total", route="other", status="404") == 1
    assert value("kbert_request_errors_total", route="/v1/predict", status="400") == 1
    assert value("kbert_request_errors_total", route="other", status="404") == 1
    assert value("kbert_request_seconds_count", route="/v1/predict") == 4
    assert value("kbert_batch_size_count") == 4 and value("kbert_batch_size_sum") == 7  # one batch a request
    assert value("kbert_batch_size_bucket", le="1.0") == 2 and value("kbert_batch_size_bucket", le="4.0") == 4
    assert value("kbert_items_total") == 7
    assert value("kbert_queue_depth") == 0


# Faults: each refused with a clear JSON error, and the next request answered


def test_malformed_json_names_its_line_and_column(client_of):
    client = client_of("classifier")
    body = '{\n  "texts": ["a film",\n}'
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(body)
    response = client.post("/v1/predict", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert f"line {expected.value.lineno}, column {expected.value.colno}" in response.json()["error"]
    answered(client)


@pytest.mark.parametrize("body, words", [
    ({"texts": [1]}, "texts[0] is a number"), ({"texts": ["a", None]}, "texts[1] is null"),
    ({"texts": {"a": "b"}}, "not an object"), ({"texts": None}, "not null"), ({"texts": [["a"]]}, "texts[0] is a list"),
    ({"texts": [True]}, "texts[0] is a boolean"), ({"texts": ["a"], "pairs": [2.5]}, "pairs[0] is a number"),
    (["a film"], "JSON object"), ("a film", "JSON object"), (3, "JSON object"), (None, "JSON object"),
], ids=["number", "null-text", "object", "null", "nested", "boolean", "pair-number", "list-body", "string-body",
        "number-body", "null-body"])
def test_wrong_types_are_400(client_of, body, words):
    client = client_of("classifier")
    response = client.post("/v1/predict", content=json.dumps(body), headers={"content-type": "application/json"})
    assert response.status_code == 400 and words in response.json()["error"], response.text
    answered(client)


@pytest.mark.parametrize("kind, path, body", [
    ("classifier", "/v1/predict", {"texts": []}), ("classifier", "/v1/predict", {"texts": ["a"], "pairs": []}),
    ("classifier", "/v1/models/classifier:predict", {"instances": []}),
    ("classifier", "/v1/models/classifier:predict", {"inputs": {"texts": []}}),
    ("question_answerer", "/v1/predict", {"questions": [], "contexts": []}),
], ids=["texts", "pairs", "instances", "inputs", "questions"])
def test_an_empty_list_is_400(client_of, kind, path, body):
    client = client_of(kind)
    response = client.post(path, json=body)
    assert response.status_code == 400 and "empty" in response.json()["error"], response.text
    answered(client, kind)


def test_an_empty_body_is_400(client_of):
    client = client_of("classifier")
    response = client.post("/v1/predict", content=b"")
    assert response.status_code == 400 and "no body" in response.json()["error"]
    answered(client)


@pytest.mark.parametrize("kind, path, body, words", [
    ("classifier", "/v1/predict", {}, "'texts'"), ("classifier", "/v1/predict", {"pairs": ["a"]}, "'texts'"),
    ("question_answerer", "/v1/predict", {"questions": ["who?"]}, "'contexts'"),
    ("question_answerer", "/v1/predict", {"contexts": ["Ann sings."]}, "'questions'"),
    ("question_answerer", "/v1/models/question_answerer:predict", {"instances": ["who?"]}, "has no 'context'"),
    ("classifier", "/v1/models/classifier:predict", {}, '"instances"'),
    ("classifier", "/v1/models/classifier:predict", {"instances": ["a"], "inputs": ["a"]}, "not both"),
], ids=["nothing", "pairs-only", "no-contexts", "no-questions", "instance-without-context", "tf-nothing", "tf-both"])
def test_a_missing_input_is_400_naming_it(client_of, kind, path, body, words):
    client = client_of(kind)
    response = client.post(path, json=body)
    assert response.status_code == 400 and words in response.json()["error"], response.text
    answered(client, kind)


@pytest.mark.parametrize("kind, path, body, words", [
    ("classifier", "/v1/predict", {"texts": ["a"], "labels": ["pos"]}, "'labels'"),
    ("token_classifier", "/v1/predict", {"texts": ["a"], "pairs": ["b"]}, "'pairs'"),
    ("classifier", "/v1/models/classifier:predict", {"instances": ["a"], "version": 2}, "'version'"),
    ("classifier", "/v1/models/classifier:predict", {"instances": [{"text": "a", "label": "pos"}]}, "'label'"),
    ("classifier", "/v1/models/classifier:predict", {"instances": ["a", 7]}, "instances[1]"),
], ids=["labels", "pairs-for-ner", "tf-field", "instance-field", "instance-number"])
def test_an_unknown_field_is_400_naming_it(client_of, kind, path, body, words):
    client = client_of(kind)
    response = client.post(path, json=body)
    assert response.status_code == 400 and words in response.json()["error"], response.text
    answered(client, kind)


@pytest.mark.parametrize("kind, body", [
    ("classifier", {"texts": ["a", "b"], "pairs": ["c"]}),
    ("question_answerer", {"questions": ["who?", "where?"], "contexts": ["x", "y", "z"]}),
], ids=["pairs", "contexts"])
def test_inputs_of_different_lengths_are_400(client_of, kind, body):
    client = client_of(kind)
    response = client.post("/v1/predict", json=body)
    first, second = list(body)
    error = response.json()["error"]
    assert response.status_code == 400 and f"{len(body[first])} {first}" in error and second in error
    answered(client, kind)


class Gated(ServedModel):
    """A fake classifier that records its batches, holds each while `release` is clear (a slow model) and raises
    on the text "boom"."""

    kind, runtime = "classifier", "fake"

    def __init__(self):
        super().__init__("gated", "gated", ["neg", "pos"], 32)
        self.batches, self.started, self.release = [], threading.Event(), threading.Event()
        self.release.set()

    def _answer(self, items):
        self.batches.append(items)
        self.started.set()
        assert self.release.wait(30), "the test never released the model"
        if ("boom",) in items:
            raise RuntimeError("the model broke")
        return [{"text": item[0], "label": "pos"} for item in items]

    def token_counts(self, texts):
        return [len(text.split()) + 2 for text in texts]


@pytest.mark.parametrize("path, body", [
    ("/v1/predict", {"texts": ["a"] * 100_000}), ("/v1/models/gated:predict", {"instances": ["a"] * 100_000}),
    ("/v1/models/gated:predict", {"inputs": {"texts": ["a"] * 100_000}}),
], ids=["texts", "instances", "inputs"])
def test_100000_texts_are_413_without_running_the_model(path, body):
    model = Gated()
    with TestClient(make_app(model)) as client:
        response = client.post(path, json=body)
        assert response.status_code == 413 and "100,000" in response.json()["error"]
        assert model.batches == []
        answered(client)
    assert model.batches == [[("a good film",)]]


def test_a_text_of_1_mb_is_413(client_of):
    client = client_of("classifier")
    for path, body in [("/v1/predict", {"texts": ["ok", "a" * 1_000_000]}),
                       ("/v1/models/classifier:predict", {"instances": ["a" * 1_000_000]})]:
        response = client.post(path, json=body)
        assert response.status_code == 413 and "1,000,000 characters" in response.json()["error"]
    answered(client)


def asgi_post(app, path, chunks, headers, pace=0.0):
    """POSTs the body `chunks` to `app` in ASGI messages (one a chunk, `pace` seconds apart; a disconnect after
    the last when `chunks` ends with None): `(status, headers, JSON body, chunks the app took)`."""
    taken, sent = [0], []

    async def receive():
        if taken[0] < len(chunks):
            await asyncio.sleep(pace)
            chunk, taken[0] = chunks[taken[0]], taken[0] + 1
            if chunk is None:
                return {"type": "http.disconnect"}
            return {"type": "http.request", "body": chunk, "more_body": taken[0] < len(chunks)}
        await asyncio.sleep(3600)  # the client sent its body and waits for the answer

    async def send(message):
        sent.append(message)

    asyncio.run(asyncio.wait_for(app(post_scope(path, headers), receive, send), 60))
    start = next(message for message in sent if message["type"] == "http.response.start")
    body = b"".join(message.get("body", b"") for message in sent if message["type"] == "http.response.body")
    return start["status"], dict(start["headers"]), json.loads(body) if body else None, taken[0]


def post_scope(path, headers=()):
    """The ASGI scope of a POST of JSON to `path`."""
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
            "path": path, "raw_path": path.encode(), "root_path": "", "query_string": b"",
            "headers": [(b"host", b"testserver"), (b"content-type", b"application/json"), *headers],
            "client": ("127.0.0.1", 50000), "server": ("testserver", 80)}


TEN_MB = b'{"texts": ["' + b"a" * (10 * 1024 * 1024) + b'"]}'
CHUNK = 64 * 1024


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_a_10_mb_body_is_413_unread(served, declared):
    app, settings = make_app(served["classifier"]), ServerSettings()
    chunks = [TEN_MB[i:i + CHUNK] for i in range(0, len(TEN_MB), CHUNK)]
    headers = [(b"content-length", str(len(TEN_MB)).encode())] if declared else [(b"transfer-encoding", b"chunked")]
    status, _, body, taken = asgi_post(app, "/v1/predict", chunks, headers)
    assert status == 413 and f"{settings.max_body_bytes:,}" in body["error"]
    assert taken == 0 if declared else taken <= settings.max_body_bytes // CHUNK + 1 < len(chunks)  # read no further
    with TestClient(app) as client:
        answered(client)


def test_a_body_that_comes_too_slowly_is_408(served):
    app = make_app(served["classifier"], settings=ServerSettings(body_timeout=0.3))
    start = time.monotonic()
    status, _, body, taken = asgi_post(app, "/v1/predict", [b'{"texts": '] + [b" "] * 100 + [b'["a"]}'], [], pace=0.1)
    assert status == 408 and "0.3 s" in body["error"] and taken < 100
    assert time.monotonic() - start < 30  # a bounded wait, not the whole body's 10 s
    with TestClient(app) as client:
        answered(client)


def test_a_client_that_disconnects_mid_body_leaves_the_server_answering(served):
    model = Gated()
    app = make_app(model)
    status, _, _, taken = asgi_post(app, "/v1/predict", [b'{"texts": ["a', None], [])
    assert taken == 2 and status == 499 and model.batches == []
    with TestClient(app) as client:
        answered(client)


def test_a_client_that_leaves_while_its_item_waits_takes_it_out_of_the_queue():
    model = Gated()
    model.release.clear()
    app = make_app(model, BatchSettings(max_batch_size=1, max_wait_ms=0))

    async def post(text, leave_after=3600.0):
        """POSTs one text; the client goes away `leave_after` seconds after its body. The status answered."""
        messages, sent = [{"type": "http.request", "body": json.dumps({"texts": [text]}).encode()}], []

        async def receive():
            if messages:
                return messages.pop()
            await asyncio.sleep(leave_after)
            return {"type": "http.disconnect"}

        async def send(message):
            sent.append(message)

        await app(post_scope("/v1/predict"), receive, send)
        return next(message["status"] for message in sent if message["type"] == "http.response.start")

    async def main():
        held = asyncio.ensure_future(post("held"))  # holds the model until released
        while not model.started.is_set():
            await asyncio.sleep(0.01)
        left = await post("left", leave_after=0.2)  # waits in the queue behind "held", then its client leaves
        model.release.set()
        return left, await held, await post("next")

    assert asyncio.run(asyncio.wait_for(main(), 60)) == (499, 200, 200)
    assert model.batches == [[("held",)], [("next",)]]  # the item of the client that left never ran


@pytest.mark.parametrize("body, at", [(b'{"texts": ["caf\xe9 noir"]}', 15), (b'\xff\xfe{"texts": ["a"]}', 0),
                                      (b'{"texts": ["a \xed\xa0\x80 b"]}', 14)],
                         ids=["latin-1", "utf-16-mark", "encoded-surrogate"])
def test_a_body_that_is_not_utf8_is_400(client_of, body, at):
    client = client_of("classifier")
    with pytest.raises(UnicodeDecodeError) as expected:
        body.decode("utf-8")
    assert expected.value.start == at
    response = client.post("/v1/predict", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert f"byte {at} is 0x{body[at]:02x}" in response.json()["error"]
    answered(client)


def test_a_lone_surrogate_escaped_in_json_is_400_not_500(client_of):
    client = client_of("token_classifier")
    response = client.post("/v1/predict", content=b'{"texts": ["a \\ud800 b"]}',
                           headers={"content-type": "application/json"})
    assert response.status_code == 400 and "texts[0]" in response.json()["error"], response.text
    answered(client, "token_classifier")


def test_a_token_is_required_where_one_is_set_but_not_for_the_page_and_health(served):
    token = {"authorization": "Bearer s3cret"}
    with TestClient(make_app(served["classifier"], settings=ServerSettings(token="s3cret"))) as client:
        for headers, words in [(None, "required"), ({"authorization": "Bearer wrong"}, "wrong"),
                               ({"authorization": "s3cret"}, "wrong"), ({"authorization": "Basic czNjcmV0"}, "wrong")]:
            response = client.post("/v1/predict", json=GOOD["classifier"], headers=headers)
            assert response.status_code == 401 and words in response.json()["error"]
            assert response.headers["www-authenticate"] == "Bearer"
        for method, path in [("GET", "/metrics"), ("GET", "/v1/model"), ("GET", "/v1/models/classifier"),
                             ("POST", "/v1/models/classifier:predict"), ("POST", "/v1/embeddings")]:
            assert client.request(method, path, json={"instances": ["a"]}).status_code == 401, path
        assert client.get("/").status_code == 200 and client.get("/health").status_code == 200
        answered(client, headers=token)
        assert client.get("/metrics", headers=token).status_code == 200


def test_a_full_queue_is_503_with_retry_after_then_answers_again():
    model = Gated()
    model.release.clear()
    app = make_app(model, BatchSettings(max_batch_size=1, max_wait_ms=0, max_queue=2), ServerSettings(retry_after=7))
    with TestClient(app) as client:
        responses = {}

        def post(i):
            responses[i] = client.post("/v1/predict", json={"texts": [f"text {i}"]})

        threads = [threading.Thread(target=post, args=(0,))]
        threads[0].start()
        assert model.started.wait(30)  # request 0 runs and holds the model: the rest wait in the queue
        threads += [threading.Thread(target=post, args=(i,)) for i in range(1, 6)]
        for thread in threads[1:]:
            thread.start()
        deadline = time.monotonic() + 30
        while len(responses) < 3 and time.monotonic() < deadline:  # 2 of 5 fit in the queue; 3 are refused at once
            time.sleep(0.01)
        model.release.set()
        for thread in threads:
            thread.join(30)
        statuses = sorted(response.status_code for response in responses.values())
        assert statuses == [200, 200, 200, 503, 503, 503]
        for response in responses.values():
            if response.status_code == 503:
                assert response.headers["retry-after"] == "7" and "busy" in response.json()["error"]
            else:
                assert response.json()["predictions"][0]["label"] == "pos"
        assert responses[0].status_code == 200
        answered(client)


def test_a_response_says_where_its_time_went_in_server_timing():
    model = Gated()
    slow = model.answer
    model.answer = lambda items: time.sleep(0.03) or slow(items)
    with TestClient(make_app(model)) as client:
        timing = client.post("/v1/predict", json={"texts": ["a film"]}).headers["server-timing"]
        durations = {name: float(value) for name, value in (part.split(";dur=") for part in timing.split(", "))}
        assert list(durations) == ["queue", "model", "back", "app"]
        assert 30 <= durations["model"] < durations["app"] < 1000
        assert durations["queue"] + durations["model"] + durations["back"] <= durations["app"]
        assert "server-timing" not in client.get("/health").headers  # the model answered nothing


def test_a_model_that_raises_is_500_then_the_next_request_is_answered(capsys):
    model = Gated()
    with TestClient(make_app(model)) as client:
        response = client.post("/v1/predict", json={"texts": ["boom"]})
        assert response.status_code == 500
        assert "RuntimeError: the model broke" in response.json()["error"]
        answered(client)
    assert "the model broke" in capsys.readouterr().err  # the traceback is in the server's log

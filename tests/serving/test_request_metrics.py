"""RequestMetrics read back through Prometheus's own parser: requests and errors by route and status, latency, the
batch-size histogram and its buckets, items, queue depth; two servers' metrics apart."""

import keras
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kbert_serving.request_metrics import CONTENT_TYPE, LATENCY_BUCKETS, RequestMetrics

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch", reason="no Keras in the metrics: runs once")


def samples(metrics):
    """{(sample name, frozenset of its labels): value} of `metrics`' exposition, as Prometheus parses it."""
    text = metrics.exposition().decode()
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(found, name, **labels):
    return found.get((name, frozenset(labels.items())))


def test_requests_and_errors_are_counted_by_route_and_status():
    metrics = RequestMetrics(max_batch_size=8)
    for route, status in [("/v1/predict", 200), ("/v1/predict", 200), ("/v1/predict", 400), ("/health", 200),
                          ("/v1/embeddings", 503), ("/v1/predict", 200)]:
        metrics.observe(route, status, 0.01)
    found = samples(metrics)
    assert value(found, "kbert_requests_total", route="/v1/predict", status="200") == 3
    assert value(found, "kbert_requests_total", route="/v1/predict", status="400") == 1
    assert value(found, "kbert_requests_total", route="/health", status="200") == 1
    assert value(found, "kbert_request_errors_total", route="/v1/predict", status="400") == 1
    assert value(found, "kbert_request_errors_total", route="/v1/embeddings", status="503") == 1
    assert value(found, "kbert_request_errors_total", route="/v1/predict", status="200") is None  # not an error
    assert sum(v for (name, _), v in found.items() if name == "kbert_request_errors_total") == 2


def test_latency_is_a_histogram_by_route():
    metrics = RequestMetrics(max_batch_size=8)
    for seconds in (0.0005, 0.003, 0.003, 0.2, 30.0):
        metrics.observe("/v1/predict", 200, seconds)
    found = samples(metrics)
    cumulative = [value(found, "kbert_request_seconds_bucket", route="/v1/predict", le=le)
                  for le in ("0.001", "0.005", "0.25", "10.0", "+Inf")]
    assert cumulative == [1, 3, 4, 4, 5]
    assert value(found, "kbert_request_seconds_count", route="/v1/predict") == 5
    assert value(found, "kbert_request_seconds_sum", route="/v1/predict") == pytest.approx(30.2065)
    assert {dict(labels)["le"] for name, labels in found if name == "kbert_request_seconds_bucket"} == {
        *(str(float(b)) for b in LATENCY_BUCKETS), "+Inf"}


@pytest.mark.parametrize("max_batch_size, bounds", [(1, ["1.0"]), (8, ["1.0", "2.0", "4.0", "8.0"]),
                                                     (24, ["1.0", "2.0", "4.0", "8.0", "16.0", "24.0"])])
def test_batch_size_buckets_are_powers_of_two_up_to_the_largest_batch(max_batch_size, bounds):
    found = samples(RequestMetrics(max_batch_size))
    assert [dict(labels)["le"] for name, labels in found if name == "kbert_batch_size_bucket"] == [*bounds, "+Inf"]


def test_batches_items_and_queue_depth():
    metrics = RequestMetrics(max_batch_size=32)
    for size, waiting in [(1, 7), (32, 40), (5, 0)]:
        metrics.observe_batch(size, waiting)
    found = samples(metrics)
    assert value(found, "kbert_batch_size_count") == 3 and value(found, "kbert_batch_size_sum") == 38
    assert value(found, "kbert_batch_size_bucket", le="1.0") == 1
    assert value(found, "kbert_batch_size_bucket", le="8.0") == 2
    assert value(found, "kbert_batch_size_bucket", le="32.0") == 3
    assert value(found, "kbert_items_total") == 38
    assert value(found, "kbert_queue_depth") == 0  # the last batch's


def test_two_servers_count_apart():
    first, second = RequestMetrics(max_batch_size=4), RequestMetrics(max_batch_size=4)
    first.observe("/health", 200, 0.001)
    first.observe_batch(3, 2)
    assert value(samples(first), "kbert_requests_total", route="/health", status="200") == 1
    found = samples(second)
    assert value(found, "kbert_requests_total", route="/health", status="200") is None
    assert value(found, "kbert_batch_size_count") == 0 and value(found, "kbert_queue_depth") == 0


def test_the_content_type_is_prometheus_text_format():
    assert CONTENT_TYPE.startswith("text/plain") and "version=" in CONTENT_TYPE

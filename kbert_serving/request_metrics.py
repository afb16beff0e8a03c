"""The server's metrics in Prometheus's text format (`GET /metrics`): requests, errors, latency, batches, queue.

Example:
>>> metrics = RequestMetrics(max_batch_size=8)
>>> metrics.observe("/v1/predict", 200, 0.012)
>>> metrics.observe_batch(4, waiting=0)
>>> text = metrics.exposition().decode()
>>> 'kbert_requests_total{route="/v1/predict",status="200"} 1.0' in text
True
"""

import prometheus_client

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CONTENT_TYPE = prometheus_client.CONTENT_TYPE_LATEST


class RequestMetrics:
    """A server's counters, in a registry of their own (two servers in one process count apart).

    Args:
        max_batch_size: int. The most items the batcher joins into one model call: the batch-size histogram's
            last bucket.
    """

    def __init__(self, max_batch_size):
        self.registry = prometheus_client.CollectorRegistry()
        self.requests = prometheus_client.Counter("kbert_requests", "HTTP requests answered, by route and status.",
                                                  ["route", "status"], registry=self.registry)
        self.errors = prometheus_client.Counter("kbert_request_errors", "Requests answered with a 4xx or 5xx status.",
                                                ["route", "status"], registry=self.registry)
        self.latency = prometheus_client.Histogram("kbert_request_seconds", "Time from a request to its response.",
                                                   ["route"], buckets=LATENCY_BUCKETS, registry=self.registry)
        sizes = [2 ** k for k in range(max_batch_size.bit_length()) if 2 ** k < max_batch_size] + [max_batch_size]
        self.batch_size = prometheus_client.Histogram("kbert_batch_size", "Items in each model call, joined from "
                                                      "concurrent requests.",
                                                      buckets=sizes, registry=self.registry)
        self.queue_depth = prometheus_client.Gauge("kbert_queue_depth", "Items waiting for a batch.",
                                                   registry=self.registry)
        self.items = prometheus_client.Counter("kbert_items", "Items (texts, pairs, questions) answered.",
                                               registry=self.registry)
        self.children = {}  # (route, status) -> its request counter, latency histogram and error counter (or None)

    def observe(self, route, status, seconds):
        """Counts one answered request of `route` (the route's pattern, not the path asked)."""
        if (route, status) not in self.children:  # labels() looks them up under a lock: once each
            self.children[route, status] = (self.requests.labels(route, str(status)), self.latency.labels(route),
                                            self.errors.labels(route, str(status)) if status >= 400 else None)
        requests, latency, errors = self.children[route, status]
        requests.inc()
        if errors is not None:
            errors.inc()
        latency.observe(seconds)

    def observe_batch(self, size, waiting):
        """Counts one model call of `size` items, with `waiting` items left in the queue."""
        self.batch_size.observe(size)
        self.items.inc(size)
        self.queue_depth.set(waiting)

    def exposition(self):
        """The metrics as Prometheus's text exposition format (bytes)."""
        return prometheus_client.generate_latest(self.registry)

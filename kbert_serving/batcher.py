"""Dynamic batching: the items of concurrent requests joined into batches of similar length, run off the event loop.

A request hands its items (texts, text pairs, questions with contexts) to `DynamicBatcher.submit` and awaits
their answers. One worker thread runs the model on one batch at a time; while it runs, the items that arrive
wait in a bounded queue, grouped by shape (single texts, pairs) and by length bucket (characters, in powers of
two). A batch leaves when `max_batch_size` items of one group are waiting, or when the oldest item has waited
`max_wait_ms`; it takes the oldest item's group first, then the nearest lengths. Past `max_queue` waiting
items a request is refused at once (`QueueFull`), so a flood of clients costs a 503, not memory.
"""

import asyncio
import collections
import concurrent.futures
import dataclasses
import time


class QueueFull(RuntimeError):
    """The batcher already holds `max_queue` waiting items."""


@dataclasses.dataclass(frozen=True)
class BatchSettings:
    """How requests are batched.

    Args:
        max_batch_size: int. Most items a model call takes.
        max_wait_ms: float. Longest an item waits for others to join its batch while the model is free.
        max_queue: int. Most items waiting; a request that would pass it is refused.
    """

    max_batch_size: int = 32
    max_wait_ms: float = 2.0
    max_queue: int = 1024

    def __post_init__(self):
        for name, low in (("max_batch_size", 1), ("max_wait_ms", 0), ("max_queue", 1)):
            if getattr(self, name) < low:
                raise ValueError(f"{name} must be at least {low}, got {getattr(self, name)}.")


def length_bucket(item):
    """The length bucket of an item (a tuple of strings): its characters' power of two.

    Example:
    >>> length_bucket(("a short text",)), length_bucket(("a question?", "a much longer context " * 10))
    (4, 8)
    """
    return sum(len(part) for part in item).bit_length()


@dataclasses.dataclass
class _Waiting:
    item: tuple
    future: asyncio.Future
    since: float


class DynamicBatcher:
    """Joins the items of concurrent `submit` calls into batches for `run`.

    Args:
        run: callable. A list of items (tuples of strings of one length) -> a list of answers, one per item,
            in order; called in the batcher's one worker thread.
        settings: `BatchSettings`.
        on_batch: callable or None. Called with each batch's size and the items still waiting (for metrics).

    Example:
    >>> async def main():
    ...     batcher = DynamicBatcher(lambda items: [item[0].upper() for item in items], BatchSettings())
    ...     answers = await asyncio.gather(batcher.submit([("a",), ("b",)]), batcher.submit([("c",)]))
    ...     await batcher.close()
    ...     return answers
    >>> asyncio.run(main())
    [['A', 'B'], ['C']]
    """

    def __init__(self, run, settings, on_batch=None):
        self.run, self.settings, self.on_batch = run, settings, on_batch
        self.groups = collections.defaultdict(collections.deque)  # (shape, length bucket) -> waiting items
        self.waiting = 0
        self.worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="kbert-batch")
        self.arrived = None  # an asyncio.Event, made on the running loop
        self.task = None

    async def submit(self, items):
        """The answers to `items` (a list of tuples of strings), once their batches have run.

        Raises `QueueFull` (at once) when they would pass `max_queue` waiting items, ValueError when they are
        more than `max_queue` items, and whatever `run` raised on a batch that held one of them."""
        if len(items) > self.settings.max_queue:
            raise ValueError(f"{len(items):,} items are more than this server ever queues "
                             f"({self.settings.max_queue:,}): send them in several requests.")
        if self.waiting + len(items) > self.settings.max_queue:
            raise QueueFull(f"{self.waiting} items are waiting; this server queues at most {self.settings.max_queue}.")
        if self.task is None:
            self.arrived, self.task = asyncio.Event(), asyncio.create_task(self._dispatch())
        loop, now = asyncio.get_running_loop(), time.monotonic()
        waiting = [_Waiting(item, loop.create_future(), now) for item in items]
        for entry in waiting:
            self.groups[(len(entry.item), length_bucket(entry.item))].append(entry)
        self.waiting += len(waiting)
        self.arrived.set()
        return list(await asyncio.gather(*(entry.future for entry in waiting)))

    async def close(self):
        """Stops dispatching and the worker thread; items still waiting are cancelled."""
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        for group in self.groups.values():
            for entry in group:
                entry.future.cancel()
        self.worker.shutdown(wait=False)  # a batch running now ends in its thread; the loop does not wait for it

    async def _dispatch(self):
        loop = asyncio.get_running_loop()
        while True:
            if not self.waiting:
                self.arrived.clear()
                await self.arrived.wait()
                continue
            batch = self._ready(time.monotonic())
            if batch == []:  # only cancelled items were waiting
                continue
            if batch is None:  # wait for more items, or for the oldest one's max_wait_ms
                self.arrived.clear()
                oldest = min(group[0].since for group in self.groups.values() if group)
                timeout = max(oldest + self.settings.max_wait_ms / 1000 - time.monotonic(), 0)
                try:
                    await asyncio.wait_for(self.arrived.wait(), timeout)
                except asyncio.TimeoutError:
                    pass
                continue
            self.waiting -= len(batch)
            if self.on_batch is not None:
                self.on_batch(len(batch), self.waiting)
            try:
                answers = await loop.run_in_executor(self.worker, self.run, [entry.item for entry in batch])
                if len(answers) != len(batch):
                    raise RuntimeError(f"The model gave {len(answers)} answers to a batch of {len(batch)} items.")
            except Exception as error:  # the requests whose items were in this batch get the error
                for entry in batch:
                    if not entry.future.done():
                        entry.future.set_exception(error)
                continue
            for entry, answer in zip(batch, answers, strict=True):
                if not entry.future.done():  # a cancelled request (its client went away) takes nothing
                    entry.future.set_result(answer)

    def _ready(self, now):
        """The next batch, or None while no group is full and the oldest item may wait longer."""
        groups = {}
        for key, group in self.groups.items():  # the items of requests whose clients went away leave
            kept = collections.deque(entry for entry in group if not entry.future.cancelled())
            self.waiting -= len(group) - len(kept)
            if kept:
                groups[key] = kept
        self.groups = collections.defaultdict(collections.deque, groups)
        if not groups:
            return []
        size = self.settings.max_batch_size
        full = [key for key, group in groups.items() if len(group) >= size]
        oldest = min(groups, key=lambda key: groups[key][0].since)
        if full:
            key = min(full, key=lambda key: groups[key][0].since)
        elif now - groups[oldest][0].since >= self.settings.max_wait_ms / 1000:
            key = oldest
        else:
            return None
        shape, bucket = key
        batch = []
        for other in sorted((k for k in groups if k[0] == shape), key=lambda k: abs(k[1] - bucket)):
            while groups[other] and len(batch) < size:
                batch.append(groups[other].popleft())
        return batch

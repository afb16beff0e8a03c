"""Dynamic batching: the items of concurrent requests joined into model calls, longest first, off the event loop.

A request hands its items (texts, text pairs, questions with contexts) to `DynamicBatcher.submit` and awaits their
answers. One thread runs the model (the served model's own, `ModelThread`), one call at a time; while it runs, the
items that arrive wait in a bounded queue, by shape (single texts, pairs, a zero-shot request's text and hypothesis
pairs: an item's type and its number of texts). When the model is free, a call takes up
to `max_batch_size` items of the oldest item's shape, longest first (the model's `predict` then cuts them into
batches of similar length). A model just freed waits up to `max_wait_ms` for as many items as were in flight as it
finished (those it answered, whose clients are likely to send again, and those waiting), so that clients answered
together are served together rather than in cohorts that take turns; a lone client, or a request that finds the
model idle longer, goes at once. Past `max_queue` waiting items a request is refused at once (`QueueFull`): a flood
of clients costs a 503, not memory.
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
        max_batch_size: int. Most items one model call takes (1: no batching).
        max_wait_ms: float. Longest a model just freed waits for the items in flight as it finished; 0: a call
            takes what waits.
        max_queue: int. Most items waiting; a request that would pass it is refused.
    """

    max_batch_size: int = 64
    max_wait_ms: float = 10.0
    max_queue: int = 1024

    def __post_init__(self):
        for name, low in (("max_batch_size", 1), ("max_wait_ms", 0), ("max_queue", 1)):
            if getattr(self, name) < low:
                raise ValueError(f"{name} must be at least {low}, got {getattr(self, name)}.")


def length(item):
    """An item's length in characters (its texts together): calls serve their items longest first.

    Example:
    >>> length(("a question?", "a context."))
    21
    """
    return sum(len(part) for part in item)


@dataclasses.dataclass
class _Waiting:
    item: tuple
    future: asyncio.Future
    since: float
    call: tuple = None  # (started, ended): its call's run, on `time.monotonic`'s clock


class DynamicBatcher:
    """Joins the items of concurrent `submit` calls into calls of `run`.

    Args:
        run: callable. A list of items (tuples of one number of strings), longest first -> a list of answers, one
            per item, in order; called on `executor`, one call at a time.
        settings: `BatchSettings`.
        on_batch: callable or None. Called with each call's number of items and the items still waiting (metrics).
        executor: a `concurrent.futures.Executor` of one worker (a served model's `thread`, where it was loaded) or
            None: a thread of the batcher's own.

    Example:
    >>> async def main():
    ...     batcher = DynamicBatcher(lambda items: [item[0].upper() for item in items], BatchSettings())
    ...     answers = await asyncio.gather(batcher.submit([("a",), ("b",)]), batcher.submit([("c",)]))
    ...     await batcher.close()
    ...     return answers
    >>> asyncio.run(main())
    [['A', 'B'], ['C']]
    """

    def __init__(self, run, settings, on_batch=None, executor=None):
        self.run, self.settings, self.on_batch = run, settings, on_batch
        self.own_executor = executor is None
        self.executor = executor or concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="kbert-batch")
        self.groups = collections.defaultdict(collections.deque)  # shape (an item's type, its texts) -> waiting items
        self.waiting = 0
        self.arrived = None  # an asyncio.Event, made on the running loop
        self.free_since = 0.0
        self.in_flight = 1  # items answered by the last call and waiting as it ended: what a call waits for
        self.task = None

    async def submit(self, items, timing=None):
        """The answers to `items` (a list of tuples of strings), once their calls have run.

        `timing`: None, or a dict this fills with where the items' time went, in seconds (the longest of them):
        `queue` (from `submit` to the start of its call), `model` (its call's `run`) and `back` (from the end of
        the call to this coroutine resuming on the event loop).

        Raises `QueueFull` (at once) when they would pass `max_queue` waiting items, ValueError when they are
        more than `max_queue` items, and whatever `run` raised on a call that held one of them."""
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
            self.groups[type(entry.item), len(entry.item)].append(entry)
        self.waiting += len(waiting)
        self.arrived.set()
        if len(waiting) == 1:  # one item (most requests): its future, without gather's
            answers = [await waiting[0].future]
        else:
            answers = list(await asyncio.gather(*(entry.future for entry in waiting)))
        if timing is not None:
            resumed = time.monotonic()
            timing.update(queue=max(entry.call[0] - entry.since for entry in waiting),
                          model=max(entry.call[1] - entry.call[0] for entry in waiting),
                          back=max(resumed - entry.call[1] for entry in waiting))
        return answers

    async def close(self):
        """Stops dispatching (and the batcher's own thread); items still waiting are cancelled."""
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        for group in self.groups.values():
            for entry in group:
                entry.future.cancel()
        if self.own_executor:
            self.executor.shutdown(wait=False)  # a call running now ends in its thread; the loop does not wait for it

    async def _dispatch(self):
        loop = asyncio.get_running_loop()
        while True:
            if not self.waiting:
                self.arrived.clear()
                await self.arrived.wait()
                continue
            call = self._ready(time.monotonic())
            if call == []:  # only cancelled items were waiting
                continue
            if call is None:  # wait for the items in flight, up to max_wait_ms of a free model
                self.arrived.clear()
                timeout = max(self.free_since + self.settings.max_wait_ms / 1000 - time.monotonic(), 0)
                try:
                    await asyncio.wait_for(self.arrived.wait(), timeout)
                except asyncio.TimeoutError:
                    pass
                continue
            self.waiting -= len(call)
            if self.on_batch is not None:
                self.on_batch(len(call), self.waiting)
            answered = loop.create_future()
            self.executor.submit(self._call, loop, call, answered)
            await answered

    def _call(self, loop, call, answered):
        """On the executor: runs a call, and hands its answers (or its error) back to the loop in one callback that
        settles its requests and the dispatcher together."""
        answers, error, started = None, None, time.monotonic()
        try:
            answers = self.run([entry.item for entry in call])
            if len(answers) != len(call):
                raise RuntimeError(f"The model gave {len(answers)} answers to a call of {len(call)} items.")
        except Exception as caught:  # the requests whose items were in this call get the error
            error = caught
        ran = (started, time.monotonic())
        for entry in call:
            entry.call = ran
        if not loop.is_closed():  # else nobody waits for these answers
            loop.call_soon_threadsafe(self._settle, call, answers, error, answered)

    def _settle(self, call, answers, error, answered):
        """On the loop: the model is free (what was in flight noted before any request it answers resumes and sends
        again), each item's request gets its answer (or `error`), and the dispatcher goes on."""
        self.free_since, self.in_flight = time.monotonic(), len(call) + self.waiting
        for i, entry in enumerate(call):
            if not entry.future.done():  # a cancelled request (its client went away) takes nothing
                if error is None:
                    entry.future.set_result(answers[i])
                else:
                    entry.future.set_exception(error)
        if not answered.done():
            answered.set_result(None)

    def _ready(self, now):
        """The next call's items, longest first; None while the oldest may wait longer; [] when none are left."""
        groups = {}
        for key, group in self.groups.items():  # the items of requests whose clients went away leave
            kept = collections.deque(entry for entry in group if not entry.future.cancelled())
            self.waiting -= len(group) - len(kept)
            if kept:
                groups[key] = kept
        self.groups = collections.defaultdict(collections.deque, groups)
        if not groups:
            return []
        shape = min(groups, key=lambda key: groups[key][0].since)
        group, size = groups[shape], self.settings.max_batch_size
        if len(group) < min(size, self.in_flight) and now - self.free_since < self.settings.max_wait_ms / 1000:
            return None
        call = [group.popleft() for _ in range(min(len(group), size))]
        return sorted(call, key=lambda entry: -length(entry.item))

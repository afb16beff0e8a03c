"""DynamicBatcher on fake models that record their calls: concurrent submits joined up to `max_batch_size`, singles
and pairs apart, longest first, `max_wait_ms` for the items in flight, answers routed back, the bounded queue, errors,
cancellation."""

import asyncio
import concurrent.futures
import threading
import time

import keras
import pytest

from kbert_serving.batcher import BatchSettings, DynamicBatcher, QueueFull, length

pytestmark = pytest.mark.skipif(keras.config.backend() != "torch", reason="no Keras in the batcher: runs once")


class Recorder:
    """A fake model: answers each item with its parts joined by "|", upper-cased, and records each batch (and the
    thread that ran it). While `hold` is set, a batch whose first item is ("hold",) waits for `release`."""

    def __init__(self, fail_on=None):
        self.batches, self.threads, self.fail_on = [], [], fail_on
        self.holding, self.release = threading.Event(), threading.Event()

    def __call__(self, items):
        self.batches.append(list(items))
        self.threads.append(threading.current_thread())
        if items[0] == ("hold",):
            self.holding.set()
            assert self.release.wait(30), "the test never released the held batch"
        if self.fail_on is not None and self.fail_on in items:
            raise RuntimeError(f"failed on {self.fail_on}")
        return ["|".join(item).upper() for item in items]


async def held(batcher, model):
    """Submits ("hold",) and returns its task once its batch runs (and blocks the worker): what is submitted
    after it waits in the queue until `model.release` is set."""
    task = asyncio.create_task(batcher.submit([("hold",)]))
    while not model.holding.is_set():
        await asyncio.sleep(0.005)
    return task


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 30))


def test_concurrent_submits_join_into_batches_of_at_most_max_batch_size():
    model = Recorder()

    async def main():
        batcher = DynamicBatcher(model, BatchSettings(max_batch_size=4, max_wait_ms=50))
        hold = await held(batcher, model)
        texts = [f"t{i}" for i in range(10)]  # one length bucket
        waiting = [asyncio.create_task(batcher.submit([(text,)])) for text in texts]
        await asyncio.sleep(0.05)
        model.release.set()
        answers = await asyncio.gather(hold, *waiting)
        await batcher.close()
        return texts, answers

    texts, answers = run(main())
    assert answers == [["HOLD"]] + [[text.upper()] for text in texts]
    assert [len(batch) for batch in model.batches] == [1, 4, 4, 2]  # 10 requests waited: joined, 4 at most
    assert sorted(item for batch in model.batches[1:] for item in batch) == sorted((text,) for text in texts)


def test_batches_run_off_the_event_loop():
    model = Recorder()

    async def main():
        batcher = DynamicBatcher(model, BatchSettings())
        await batcher.submit([("a",)])
        await batcher.close()

    run(main())
    assert model.threads and model.threads[0] is not threading.main_thread()


def test_calls_run_on_the_executor_given_which_close_leaves_running():
    model, executor = Recorder(), concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="the-model")

    async def main():
        batcher = DynamicBatcher(model, BatchSettings(), executor=executor)
        answers = [await batcher.submit([("a",)]), await batcher.submit([("b",)])]
        await batcher.close()
        return answers

    assert run(main()) == [["A"], ["B"]]
    assert [thread.name for thread in model.threads] == ["the-model_0"] * 2
    assert executor.submit(threading.current_thread).result().name == "the-model_0"
    executor.shutdown()


def test_singles_and_pairs_are_never_in_one_batch():
    model = Recorder()

    async def main():
        batcher = DynamicBatcher(model, BatchSettings(max_batch_size=8, max_wait_ms=20))
        hold = await held(batcher, model)
        requests = [[("a",), ("b", "c")], [("d", "e")], [("f",), ("g",)], [("h", "i"), ("j",)]]
        waiting = [asyncio.create_task(batcher.submit(items)) for items in requests]
        await asyncio.sleep(0.05)
        model.release.set()
        answers = await asyncio.gather(*waiting)
        await hold
        await batcher.close()
        return answers

    answers = run(main())
    assert answers == [["A", "B|C"], ["D|E"], ["F", "G"], ["H|I", "J"]]
    shapes = [{len(item) for item in batch} for batch in model.batches[1:]]
    assert shapes == [{1}, {2}] or shapes == [{2}, {1}], model.batches  # each shape in one batch of its own


def test_a_call_serves_its_items_longest_first():
    model = Recorder()
    short, long = "s" * 5, "l" * 300
    assert length((short,)) < length((long,))

    async def main():
        batcher = DynamicBatcher(model, BatchSettings(max_batch_size=8, max_wait_ms=20))
        hold = await held(batcher, model)
        arriving = [short, long] * 4  # interleaved: a call in arrival order would mix them
        waiting = [asyncio.create_task(batcher.submit([(f"{text}{i}",)])) for i, text in enumerate(arriving)]
        await asyncio.sleep(0.05)
        model.release.set()
        await asyncio.gather(hold, *waiting)
        await batcher.close()

    run(main())
    lengths = [len(item[0]) for item in model.batches[1]]
    assert lengths == sorted(lengths, reverse=True) and lengths[0] == 301, model.batches


def test_a_model_just_freed_waits_for_the_items_in_flight_up_to_max_wait_ms():
    model = Recorder()

    async def main():
        batcher = DynamicBatcher(model, BatchSettings(max_batch_size=64, max_wait_ms=300))
        await batcher.submit([("a",), ("b",), ("c",)])  # a call of 3: the model then waits for 3 items
        start = time.monotonic()
        answer = await batcher.submit([("alone",)])
        waited = time.monotonic() - start
        await batcher.close()
        return answer, waited

    answer, waited = run(main())
    assert answer == ["ALONE"] and model.batches[-1] == [("alone",)]
    assert 0.25 <= waited < 20  # it waited for the others, but not for ever


def test_a_lone_client_does_not_wait():
    model = Recorder()

    async def main():
        batcher = DynamicBatcher(model, BatchSettings(max_batch_size=64, max_wait_ms=60_000))
        answers = [await batcher.submit([(f"t{i}",)]) for i in range(3)]  # one item in flight, each time
        await batcher.close()
        return answers

    assert run(main()) == [["T0"], ["T1"], ["T2"]]  # within `run`'s 30 s: no call waited its minute


def test_a_full_batch_does_not_wait_for_max_wait_ms():
    model = Recorder()

    async def main():
        batcher = DynamicBatcher(model, BatchSettings(max_batch_size=2, max_wait_ms=60_000))
        answers = await batcher.submit([("a",), ("b",)])
        await batcher.close()
        return answers

    assert run(main()) == ["A", "B"]  # within `run`'s 60 s: it did not wait its minute


def test_answers_go_back_to_their_requests_in_order():
    model = Recorder()
    requests = [[(f"r{r}i{i}",) for i in range(r % 4 + 1)] + [(f"r{r}", "pair")] for r in range(12)]

    async def main():
        batcher = DynamicBatcher(model, BatchSettings(max_batch_size=5, max_wait_ms=1))
        answers = await asyncio.gather(*(batcher.submit(items) for items in requests))
        await batcher.close()
        return answers

    answers = run(main())
    assert answers == [["|".join(item).upper() for item in items] for items in requests]
    assert len(model.batches) < sum(map(len, requests))  # some were batched together


def test_timing_says_how_long_the_items_waited_and_their_call_ran():
    model = Recorder()

    def slow(items):
        time.sleep(0.05)
        return model(items)

    async def main():
        batcher = DynamicBatcher(slow, BatchSettings(max_batch_size=1, max_wait_ms=0))
        first, second = {}, {}
        await asyncio.gather(batcher.submit([("a",)], first), batcher.submit([("b",), ("c",)], second))
        await batcher.close()
        return first, second

    first, second = run(main())
    assert sorted(first) == sorted(second) == ["back", "model", "queue"]
    assert 0.05 <= first["model"] < 1 and 0.05 <= second["model"] < 1  # one call's run: the slowest item's
    assert 0 <= first["queue"] < 0.05 <= second["queue"]  # "c" waited for the calls of "a" and "b"
    assert 0 <= first["back"] < 1 and 0 <= second["back"] < 1


def test_the_queue_refuses_past_max_queue_and_accepts_again_after():
    model = Recorder()

    async def main():
        batcher = DynamicBatcher(model, BatchSettings(max_batch_size=8, max_wait_ms=1, max_queue=3))
        hold = await held(batcher, model)  # running: it no longer waits in the queue
        queued = asyncio.create_task(batcher.submit([("a",), ("b",)]))
        await asyncio.sleep(0.01)
        with pytest.raises(QueueFull):
            await batcher.submit([("c",), ("d",)])  # 2 waiting + 2 > 3
        third = asyncio.create_task(batcher.submit([("e",)]))  # 2 waiting + 1 fits
        await asyncio.sleep(0.01)
        with pytest.raises(QueueFull):
            await batcher.submit([("f",)])
        model.release.set()
        answers = [await hold, await queued, await third]
        answers.append(await batcher.submit([("g",), ("h",), ("i",)]))  # the queue emptied: 3 fit again
        await batcher.close()
        return answers

    assert run(main()) == [["HOLD"], ["A", "B"], ["E"], ["G", "H", "I"]]
    assert not any(("c",) in batch or ("f",) in batch for batch in model.batches)


def test_an_error_goes_to_the_requests_of_its_batch_and_the_next_batch_runs():
    model = Recorder(fail_on=("boom",))

    async def main():
        batcher = DynamicBatcher(model, BatchSettings(max_batch_size=2, max_wait_ms=1))
        hold = await held(batcher, model)
        failing = [asyncio.create_task(batcher.submit([(text,)])) for text in ("boom", "okay")]  # one batch of 2
        after = asyncio.create_task(batcher.submit([("next",)]))
        await asyncio.sleep(0.01)
        model.release.set()
        outcomes = await asyncio.gather(hold, *failing, after, return_exceptions=True)
        outcomes.append(await batcher.submit([("later",)]))
        await batcher.close()
        return outcomes

    hold, boom, okay, after, later = run(main())
    assert model.batches[1] == [("boom",), ("okay",)]
    assert isinstance(boom, RuntimeError) and isinstance(okay, RuntimeError) and "boom" in str(okay)
    assert (hold, after, later) == (["HOLD"], ["NEXT"], ["LATER"])


def test_a_model_giving_too_few_answers_fails_its_batch_and_the_next_runs():
    def one_short(items):
        return [item[0] for item in items][: -1 if ("short",) in items else None]

    async def main():
        batcher = DynamicBatcher(one_short, BatchSettings(max_batch_size=2, max_wait_ms=1))
        failed = await asyncio.gather(asyncio.wait_for(batcher.submit([("short",), ("x",)]), 5),
                                      return_exceptions=True)
        answered = await asyncio.wait_for(batcher.submit([("next",)]), 5)  # with no dispatcher left, it would hang
        await batcher.close()
        return failed[0], answered

    failed, answered = run(main())
    assert isinstance(failed, Exception) and not isinstance(failed, asyncio.TimeoutError), failed
    assert answered == ["next"]


def test_a_cancelled_submit_is_not_run_and_the_next_is():
    model = Recorder()

    async def main():
        batcher = DynamicBatcher(model, BatchSettings(max_batch_size=8, max_wait_ms=1))
        hold = await held(batcher, model)
        gone = asyncio.create_task(batcher.submit([("gone",), ("gone too",)]))
        await asyncio.sleep(0.01)
        gone.cancel()  # its client went away while it waited
        kept = asyncio.create_task(batcher.submit([("kept",)]))
        await asyncio.sleep(0.01)
        model.release.set()
        answers = [await hold, await kept]
        with pytest.raises(asyncio.CancelledError):
            await gone
        answers.append(await batcher.submit([("next",)]))
        waiting = batcher.waiting
        await batcher.close()
        return answers, waiting

    answers, waiting = run(main())
    assert answers == [["HOLD"], ["KEPT"], ["NEXT"]] and waiting == 0
    assert not any(item[0].startswith("gone") for batch in model.batches for item in batch)


def test_close_cancels_the_waiting_items():
    model = Recorder()

    async def main():
        batcher = DynamicBatcher(model, BatchSettings(max_batch_size=64, max_wait_ms=60_000))
        hold = await held(batcher, model)  # the model is busy: what comes next waits in the queue
        waiting = asyncio.create_task(batcher.submit([("a",), ("b",)]))
        await asyncio.sleep(0.05)
        await batcher.close()
        model.release.set()
        await asyncio.wait([waiting], timeout=10)
        hold.cancel()
        return waiting.cancelled()  # here: asyncio.run cancels what is left when `main` returns

    assert run(main())
    assert model.batches == [[("hold",)]]


@pytest.mark.parametrize("field, value", [("max_batch_size", 0), ("max_wait_ms", -1), ("max_queue", 0)])
def test_settings_out_of_range_are_refused(field, value):
    with pytest.raises(ValueError, match=f"{field} must be at least"):
        BatchSettings(**{field: value})

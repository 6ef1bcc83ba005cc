"""`trix.natsio.publish.ask_until`, the one retry loop of the platform's NATS calls (the
table's storage reads, the gateway's accounts, `publish_once`): what it asks again, how long
each attempt may wait, and that it gives up by its deadline with the last error."""

from __future__ import annotations

import asyncio

import nats.errors
import nats.js.errors
import pytest

from trix.natsio.publish import ask_until, in_process


def _api_error(code: int) -> nats.js.errors.APIError:
    return nats.js.errors.APIError(code=503 if code == 10158 else 400, err_code=code, description="refused")


async def test_a_call_nats_does_not_answer_is_asked_again_until_answered() -> None:
    waits: list[float] = []

    async def call(wait_s: float) -> str:
        waits.append(wait_s)
        if len(waits) < 3:
            raise nats.errors.TimeoutError
        return "answered"

    assert await ask_until(call, deadline_s=5.0, attempt_s=0.5, first_pause_s=0.01) == "answered"
    assert waits == [0.5, 0.5, 0.5]


async def test_a_refusal_is_raised_at_once_and_in_process_only_when_asked() -> None:
    calls = 0

    async def refused(_wait_s: float) -> None:
        nonlocal calls
        calls += 1
        raise _api_error(10071)  # wrong last sequence: a "no" for good

    with pytest.raises(nats.js.errors.APIError):
        await ask_until(refused, deadline_s=5.0, attempt_s=0.5, in_process_too=True)
    assert calls == 1

    async def in_process_once(_wait_s: float) -> str:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise _api_error(10158)  # duplicate message id in process: "not now"
        return "stored"

    stored = await ask_until(in_process_once, deadline_s=5.0, attempt_s=0.5, first_pause_s=0.01, in_process_too=True)
    assert stored == "stored"
    assert calls == 3
    calls = 1
    with pytest.raises(nats.js.errors.APIError):
        await ask_until(in_process_once, deadline_s=5.0, attempt_s=0.5, first_pause_s=0.01)


async def test_attempts_shrink_to_the_time_left_and_the_last_error_comes_by_the_deadline() -> None:
    waits: list[float] = []
    loop = asyncio.get_running_loop()

    async def never(wait_s: float) -> None:
        waits.append(wait_s)
        await asyncio.sleep(wait_s)
        raise nats.errors.TimeoutError

    started = loop.time()
    with pytest.raises(nats.errors.TimeoutError):
        await ask_until(never, deadline_s=1.0, attempt_s=0.6, min_attempt_s=0.1, first_pause_s=0.05, max_pause_s=0.1)
    took = loop.time() - started
    assert waits[0] == 0.6
    assert all(0.1 <= w < 0.6 for w in waits[1:]) and len(waits) >= 2
    assert 0.9 <= took <= 1.5  # the attempts end by the deadline, not an attempt past it


def test_a_kv_key_not_found_is_not_taken_for_an_attempt_in_process() -> None:
    """nats-py builds `KeyNotFoundError` (an APIError) without an `err_code`: asking whether it
    means "in process" answers no instead of raising AttributeError (a sign-in during a KV
    fault once failed INTERNAL on it)."""
    assert not in_process(nats.js.errors.KeyNotFoundError())
    assert in_process(_api_error(10164))
    assert not in_process(_api_error(10071))

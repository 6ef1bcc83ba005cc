"""Rate limits of the gateway: `RateLimiter`, one token bucket, and `KeyedLimits`, one bucket
per key (a player, a client address), the least recently used forgotten."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from trix.errors import ResourceExhausted


class KeyedLimits:
    """One token bucket per key (a player, a client address), the least recently used
    forgotten beyond `max_keys` (a forgotten key starts again with a full bucket)."""

    def __init__(self, rate: float, burst: int, max_keys: int = 10000) -> None:
        self.rate, self.burst, self.max_keys = rate, burst, max_keys
        self.buckets: OrderedDict[str, RateLimiter] = OrderedDict()

    def allow(self, key: str) -> bool:
        bucket = self.buckets.get(key)
        if bucket is None:
            bucket = self.buckets[key] = RateLimiter(self.rate, self.burst)
            while len(self.buckets) > self.max_keys:
                self.buckets.popitem(last=False)
        else:
            self.buckets.move_to_end(key)
        return bucket.allow()

    def wait_s(self, key: str) -> float:
        """Seconds until `key` has a token again (0 for a key not limited now)."""
        bucket = self.buckets.get(key)
        return 0.0 if bucket is None else bucket.wait_s()


class RateLimiter:
    """A token bucket: `rate` messages per second, up to `burst` at once."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.tokens = float(burst)
        self.clock = clock
        self.at = clock()

    def allow(self) -> bool:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def wait_s(self) -> float:
        """Seconds until the next token, as of the last `allow` (the delay a refused client is
        told to wait: `google.rpc.RetryInfo`, `ClientError.retry_delay`)."""
        return max(0.0, (1.0 - self.tokens) / self.rate)


def rate_limited(limiter: RateLimiter) -> ResourceExhausted:
    """The refusal of a request over its bucket, with the delay to wait."""
    return ResourceExhausted("rate limit: slow down", retry_after_s=limiter.wait_s())

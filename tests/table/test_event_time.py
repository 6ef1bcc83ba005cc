"""An event's time and a turn's deadline (docs/rules.md §9: what the timers act on and a client
counts down from) are the UTC instant protobuf's own `Timestamp.FromDatetime` gives, to the
nanosecond: `trix.table.conversions.set_time` only skips protobuf's Python conversion."""

from __future__ import annotations

import random
from datetime import timedelta

from google.protobuf.timestamp_pb2 import Timestamp

from trix.table.conversions import from_ms, set_time


def test_set_time_is_protobufs_from_datetime_for_every_utc_instant() -> None:
    rng = random.Random(9)
    timeouts = (0, 1, 8, 12, 15, 0.5, 2.5, 12.345678)  # §9 defaults and table options, and odd ones
    for _ in range(20_000):
        when = from_ms(rng.randrange(0, 4_102_444_800_000)) + timedelta(seconds=rng.choice(timeouts))
        expected, got = Timestamp(), Timestamp()
        expected.FromDatetime(when)
        set_time(got, when)
        assert (got.seconds, got.nanos) == (expected.seconds, expected.nanos), when

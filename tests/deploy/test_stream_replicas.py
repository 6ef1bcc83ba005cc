"""TRIX_NATS_STREAM_REPLICAS: R1 by default (`trix up`), R3 on the production cluster (issue 11)."""

from __future__ import annotations

import pytest

from trix.natsio.provisioning import KV_BUCKETS, STREAMS
from trix.runtime.config import ConfigError, RuntimeConfig


def test_default_is_one_replica() -> None:
    assert RuntimeConfig.from_env("table", {}).nats_stream_replicas == 1
    assert all(spec.config().num_replicas == 1 for spec in STREAMS)
    assert all(kv.config().replicas == 1 for kv in KV_BUCKETS)


def test_three_replicas_reach_every_stream_and_bucket() -> None:
    cfg = RuntimeConfig.from_env("table", {"TRIX_NATS_STREAM_REPLICAS": "3"})
    assert cfg.nats_stream_replicas == 3
    assert all(spec.config(cfg.nats_stream_replicas).num_replicas == 3 for spec in STREAMS)
    assert all(kv.config(cfg.nats_stream_replicas).replicas == 3 for kv in KV_BUCKETS)


@pytest.mark.parametrize("bad", ["0", "6", "three"])
def test_bad_replica_count_names_the_variable(bad: str) -> None:
    with pytest.raises(ConfigError, match="TRIX_NATS_STREAM_REPLICAS"):
        RuntimeConfig.from_env("table", {"TRIX_NATS_STREAM_REPLICAS": bad})

"""TRIX_NATS_STREAM_REPLICAS: R1 by default (`trix up`), R3 on a 3-node NATS cluster, every overlay's
(issues 11, 41)."""

from __future__ import annotations

import k8s_check as kc
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


@pytest.mark.parametrize("overlay", kc.OVERLAYS)
def test_every_overlay_keeps_as_many_copies_of_each_stream_as_it_runs_nats_nodes(overlay: str) -> None:
    """A 3-node NATS runs R3 in every overlay (as `trix up --nats-cluster 3`): with R1 a node's
    restart loses the memory lease buckets it held and lease revisions, the writer epochs,
    start again at 1 (docs/deploy.md, two writers under one epoch). Every container that reads
    TRIX_NATS_STREAM_REPLICAS (the provisioning Job first) starts with the NATS node count."""
    objs = kc.render(overlay)
    nodes = next(o for o in kc.of_kind(objs, "StatefulSet") if o["metadata"]["name"] == "nats")["spec"]["replicas"]
    assert nodes == 3
    seen = {}
    for owner in [*kc.of_kind(objs, "Deployment"), *kc.of_kind(objs, "Job")]:
        for container in owner["spec"]["template"]["spec"]["containers"]:
            value = kc.container_env(container, objs).get("TRIX_NATS_STREAM_REPLICAS")
            if value is not None:
                seen[owner["metadata"]["name"]] = value
    assert "nats-provision" in seen
    assert seen == dict.fromkeys(seen, str(nodes))

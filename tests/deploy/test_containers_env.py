"""`python -m trix.containers up --env WORKLOAD:NAME=VALUE` (issue 41): a run's settings (the
container test's TRIX_TABLE_PURGE_FINISHED=false) reach the named workload's container through
the translation, the rendered manifests stay as they were, and a name not in the manifests is
refused. No podman needed."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import k8s_check as kc
import pytest

from trix import containers, kubeplay


def env_of(plan: kubeplay.Plan, pod: str, container: str) -> dict[str, Any]:
    spec = plan.pod_named(pod).pod["spec"]
    entries = next(c for c in spec["containers"] if c["name"] == container).get("env", [])
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in entries}


def test_env_given_for_a_workload_reaches_its_pods_and_only_them() -> None:
    rendered = kc.render("dev")
    kept = copy.deepcopy(rendered)
    env = containers.parse_env(["table:TRIX_TABLE_PURGE_FINISHED=false", "gateway:TRIX_GATEWAY_RATE_PER_S=1000"])
    plan = kubeplay.translate(containers.with_env(rendered, env), image_map=containers.LOCAL_IMAGES)
    assert env_of(plan, "table-0", "table")["TRIX_TABLE_PURGE_FINISHED"] == "false"
    assert env_of(plan, "gateway-0", "gateway")["TRIX_GATEWAY_RATE_PER_S"] == "1000"
    assert "TRIX_TABLE_PURGE_FINISHED" not in env_of(plan, "gateway-0", "gateway")
    assert rendered == kept  # the caller's objects are not changed


def test_env_given_for_a_job_reaches_its_only_container() -> None:
    """The provisioning Job's one container is `provision`: the run's setting reaches it."""
    env = containers.parse_env(["nats-provision:TRIX_NATS_STREAM_REPLICAS=3"])
    plan = kubeplay.translate(containers.with_env(kc.render("dev"), env), image_map=containers.LOCAL_IMAGES)
    assert env_of(plan, "nats-provision", "provision")["TRIX_NATS_STREAM_REPLICAS"] == "3"


def test_env_given_replaces_an_entry_of_the_same_name() -> None:
    rendered = kc.render("dev")
    table = next(o for o in rendered if o["kind"] == "Deployment" and o["metadata"]["name"] == "table")
    first = table["spec"]["template"]["spec"]["containers"][0]["env"][0]["name"]
    out = containers.with_env(rendered, {"table": {first: "x"}})
    table = next(o for o in out if o["kind"] == "Deployment" and o["metadata"]["name"] == "table")
    entries = [e for e in table["spec"]["template"]["spec"]["containers"][0]["env"] if e["name"] == first]
    assert entries == [{"name": first, "value": "x"}]


@pytest.mark.parametrize(
    ("parse", "item", "message"),
    [
        *((containers.parse_env, i, "WORKLOAD:NAME=VALUE") for i in ["table", "table:NAME", ":NAME=1", "table:=1"]),
        *((containers.parse_replicas, i, "DEPLOYMENT=N") for i in ["table", "table=0", "table=x", "=2"]),
    ],
)
def test_a_run_setting_not_in_its_form_is_refused(
    parse: Callable[[list[str]], object], item: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        parse([item])


def test_env_for_a_workload_not_in_the_manifests_is_refused() -> None:
    with pytest.raises(ValueError, match="no workload tabel"):
        containers.with_env(kc.render("dev"), {"tabel": {"A": "1"}})


def test_replicas_given_for_a_deployment_play_that_many_pods() -> None:
    rendered = kc.render("dev")
    objs = containers.with_replicas(rendered, containers.parse_replicas(["table=2"]))
    plan = kubeplay.translate(objs, image_map=containers.LOCAL_IMAGES)
    assert sorted(p.name for p in plan.pods if p.workload == "table") == ["table-0", "table-1"]
    assert sorted(p.name for p in plan.pods if p.workload == "gateway") == ["gateway-0"]  # the dev overlay's one
    line = next(d for d in plan.report if d.kind == "Deployment" and d.name == "table")
    assert "spec.replicas" in line.detail


def test_replicas_for_a_deployment_not_in_the_manifests_are_refused() -> None:
    with pytest.raises(ValueError, match="no Deployment nats"):
        containers.with_replicas(kc.render("dev"), {"nats": 3})  # a StatefulSet, not a Deployment


def test_a_containers_own_env_wins_over_its_config_map_in_the_played_pod() -> None:
    """Kubernetes gives `env` precedence over `envFrom`; podman 4.3 applies envFrom last (podman
    issue 27287: the run's R3 given to the provisioning Job over trix-config's R1 never reached
    the streams). The translation writes the ConfigMap's keys as entries under the container's own."""
    rendered = kc.render("dev")
    config = next(
        o["data"] for o in rendered if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("trix-config")
    )
    env = containers.parse_env(["nats-provision:TRIX_NATS_STREAM_REPLICAS=5", "table:TRIX_LOG_LEVEL=debug"])
    plan = kubeplay.translate(containers.with_env(rendered, env), image_map=containers.LOCAL_IMAGES)
    for pod, container, name, value in (
        ("nats-provision", "provision", "TRIX_NATS_STREAM_REPLICAS", "5"),
        ("table-0", "table", "TRIX_LOG_LEVEL", "debug"),
    ):
        spec = next(c for c in plan.pod_named(pod).pod["spec"]["containers"] if c["name"] == container)
        assert "envFrom" not in spec
        names = [e["name"] for e in spec["env"]]
        assert names.count(name) == 1
        assert env_of(plan, pod, container)[name] == value
        assert {k: env_of(plan, pod, container)[k] for k in config if k != name} == {
            k: v for k, v in config.items() if k != name
        }

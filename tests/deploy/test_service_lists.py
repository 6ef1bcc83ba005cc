"""Each service declared once (issue 38): every list of the services deploy/k8s writes by
hand holds every service of trix.declarations.SERVICES, and `make k8s-check` fails, naming
the file and the service, on a copy of a list that misses one."""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import k8s_check as kc
import k8s_service_lists as sl
import pytest
import yaml

from trix import declarations
from trix.natsio import permissions

Obj = dict[str, Any]


def test_every_declared_service_is_in_every_list_of_the_services() -> None:
    assert sl.check() == []


def test_each_list_holds_exactly_the_services_and_the_nats_users() -> None:
    """The readers read the real lists (a reader finding nothing would pass nothing)."""
    services, users = set(sl.declared()), set(permissions.USERS)
    assert services == {"table", "timers", "scoring", "matchmaking", "competitions", "social", "gateway"}
    found = {(listed.path.name, listed.what): listed.names() for listed in sl.LISTS}
    assert len(found) == len(sl.LISTS)
    by_file = {path: names for (path, _), names in found.items()}
    assert by_file["kustomization.yaml"] == services
    assert by_file["service-monitors.yaml"] == services
    assert by_file["external-secrets.yaml"] == users
    assert by_file["generate_secrets.py"] == users
    nats = [names for (path, _), names in found.items() if path == "nats.yaml"]
    assert nats == [users, services | {"nats-provision"}]


def test_the_manifests_of_the_services_are_in_their_own_folder() -> None:
    assert sorted(p.stem for p in sl.SERVICES_DIR.glob("*.yaml") if p.stem != "kustomization") == sorted(sl.declared())


# -- a list missing a service fails the check --------------------------------------------


def _yaml_without(edit: Callable[[list[Obj], str], None]) -> Callable[[Path, str, Path], None]:
    def write(source: Path, service: str, target: Path) -> None:
        docs = [d for d in yaml.safe_load_all(source.read_text()) if d]
        edit(docs, service)
        target.write_text(yaml.safe_dump_all(docs))

    return write


def _the(docs: list[Obj], kind: str, name: str) -> Obj:
    (obj,) = [d for d in docs if d.get("kind") == kind and d["metadata"]["name"] == name]
    return obj


def _drop_resource(docs: list[Obj], service: str) -> None:
    docs[0]["resources"].remove(f"{service}.yaml")


def _drop_password(docs: list[Obj], service: str) -> None:
    nats = _the(docs, "StatefulSet", "nats")["spec"]["template"]["spec"]["containers"][0]
    nats["env"] = [e for e in nats["env"] if e.get("valueFrom", {}).get("secretKeyRef", {}).get("key") != service]


def _drop_client(docs: list[Obj], service: str) -> None:
    for rule in _the(docs, "NetworkPolicy", "nats")["spec"]["ingress"]:
        for peer in rule["from"]:
            for expr in peer.get("podSelector", {}).get("matchExpressions", []):
                expr["values"].remove(service)


def _drop_external(docs: list[Obj], service: str) -> None:
    spec = _the(docs, "ExternalSecret", "trix-nats-users")["spec"]
    spec["data"] = [d for d in spec["data"] if d["secretKey"] != service]


def _drop_monitored(docs: list[Obj], service: str) -> None:
    (expr,) = _the(docs, "ServiceMonitor", "trix-services")["spec"]["selector"]["matchExpressions"]
    expr["values"].remove(service)


def _dev_secrets_without(source: Path, service: str, target: Path) -> None:
    text = source.read_text()
    line = next(ln for ln in text.splitlines() if ln.lstrip().startswith('"nats-users.env": ('))
    target.write_text(text.replace(line, re.sub(rf'"{service}",\s*', "", line)))


WITHOUT: dict[str, Callable[[Path, str, Path], None]] = {
    "resources": _yaml_without(_drop_resource),
    "StatefulSet/nats": _yaml_without(_drop_password),
    "NetworkPolicy/nats": _yaml_without(_drop_client),
    "nats-users.env": _dev_secrets_without,
    "ExternalSecret": _yaml_without(_drop_external),
    "ServiceMonitor": _yaml_without(_drop_monitored),
}


def _writer(listed: sl.ServiceList) -> Callable[[Path, str, Path], None]:
    (write,) = [w for prefix, w in WITHOUT.items() if listed.what.startswith(prefix)]
    return write


@pytest.mark.parametrize("service", sl.declared())
@pytest.mark.parametrize("listed", sl.LISTS, ids=lambda listed: f"{listed.path.name}:{listed.what.split()[0]}")
def test_a_list_missing_a_declared_service_fails_naming_the_file_and_the_service(
    listed: sl.ServiceList, service: str, tmp_path: Path
) -> None:
    broken = tmp_path / listed.path.name
    _writer(listed)(listed.path, service, broken)
    copy = dataclasses.replace(listed, path=broken)
    assert copy.names() == listed.names() - {service}
    assert sl.missing_services([copy]) == [f"{broken}: {listed.what} miss the declared service {service}"]
    whole = [copy if other is listed else other for other in sl.LISTS]
    assert sl.check(whole) == sl.missing_services([copy])


def test_a_password_variable_named_for_another_user_does_not_count(tmp_path: Path) -> None:
    nats_yaml = kc.BASE / "nats.yaml"
    broken = tmp_path / "nats.yaml"
    broken.write_text(nats_yaml.read_text().replace("NATS_PASSWORD_SCORING", "NATS_PASSWORD_SCORE"))
    assert "scoring" not in sl.nats_passwords(broken)
    assert "scoring" in sl.nats_passwords(nats_yaml)


def test_a_newly_declared_service_fails_every_list_until_it_is_added() -> None:
    """A throwaway service `chat`: declared, so every list and the packages must name it."""
    names = [*sl.declared(), "chat"]
    problems = sl.check(names=names)
    assert problems[0] == "trix.declarations declares chat but services/trix/chat/__main__.py does not exist"
    assert problems[1:] == [
        f"{listed.path.relative_to(sl.ROOT)}: {listed.what} miss the declared service chat" for listed in sl.LISTS
    ]


def test_a_service_package_without_a_declaration_fails() -> None:
    assert sl.undeclared_packages([n for n in sl.declared() if n != "timers"]) == [
        "services/trix/timers runs as a service but trix.declarations does not declare it"
    ]


def test_the_check_is_a_step_of_make_k8s_check() -> None:
    steps = dict(kc._steps())
    assert steps["every declared service (trix.declarations) in every list of the services"] is sl.check


# -- who may call whom, and how each service scales, as declared ---------------------------


def _policy(objs: list[Obj], name: str) -> Obj:
    return kc.by_name(objs, "NetworkPolicy")[name]["spec"]


def test_a_network_policy_not_matching_the_declared_callers_is_caught() -> None:
    objs = copy.deepcopy(kc.render("dev"))
    callers = _policy(objs, "scoring")["ingress"][0]["from"]
    callers[:] = [c for c in callers if c.get("podSelector", {}).get("matchLabels") != {sl.NAME_LABEL: "matchmaking"}]
    egress = _policy(objs, "gateway")["egress"]
    egress[:] = [
        r
        for r in egress
        if r.get("to", [{}])[0].get("podSelector", {}).get("matchLabels") != {sl.NAME_LABEL: "scoring"}
    ]
    assert sl.check_callers(objs) == [
        "NetworkPolicy/scoring: admits gRPC from ['competitions', 'gateway'], declares the callers "
        "['competitions', 'gateway', 'matchmaking'] (trix.declarations)",
        "NetworkPolicy/gateway: lets gRPC out to ['competitions', 'matchmaking', 'social'], the services declaring "
        "it a caller are ['competitions', 'matchmaking', 'scoring', 'social'] (trix.declarations)",
    ]


def test_a_newly_declared_caller_fails_until_both_network_policies_allow_it() -> None:
    scoring = declarations.declaration("scoring")
    services = [
        dataclasses.replace(s, callers=(*s.callers, "table")) if s is scoring else s for s in declarations.SERVICES
    ]
    problems = sl.check_callers(kc.render("dev"), services)
    assert [p.split(":")[0] for p in problems] == ["NetworkPolicy/scoring", "NetworkPolicy/table"]
    assert sl.check_callers(kc.render("dev")) == []


def test_each_service_scales_the_way_it_is_declared() -> None:
    assert sorted((*kc.HPA_SERVICES, *kc.KEDA_SERVICES)) == sorted(sl.declared())
    for overlay in kc.OVERLAYS:
        objs = kc.render(overlay)
        for service in declarations.SERVICES:
            kind = {"cpu": "HorizontalPodAutoscaler", "lag": "ScaledObject"}[service.scaling.autoscale_on]
            assert service.name in kc.by_name(objs, kind), (overlay, service.name)

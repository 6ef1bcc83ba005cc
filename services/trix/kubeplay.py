"""deploy/k8s as `podman kube play` 4.3 can run it (issue 41): the translation step.

The input is the rendered objects of an overlay (`kubectl kustomize deploy/k8s/overlays/<o>`);
the output is a `Plan`: the podman secrets to create first, one network, the named volumes,
and one Pod document per pod to play, in start order, with its network aliases. What podman
4.3 lacks or gets wrong, and what this step does about it:

- StatefulSet: skipped by kube play -> `replicas` pods named `<set>-<i>` with hostname and
  the aliases `<set>-<i>.<serviceName>`, each with its own volume per claim template
  (`<claim>-<set>-<i>`, the Kubernetes name).
- Job: skipped -> one pod with `restartPolicy: Never` (it runs once; `run_once`).
- Deployment: one pod each in kube play -> the replicas the manifests ask for (spec.replicas,
  else the HPA's or ScaledObject's minimum), pods `<deployment>-<i>`.
- Service: skipped -> its name (and `<name>.<namespace>`, `<name>.<namespace>.svc`) as network
  aliases of the pods it selects; a LoadBalancer/NodePort Service is the edge: its target
  port is the only one published on the host (kube play publishes every containerPort, so
  all the others are removed).
- Secret: played Secrets are read back wrongly -> created first with `podman secret create`
  from the Secret's JSON; never played.
- `$(VAR)` in env, command and args is not expanded by podman -> expanded here the way the
  kubelet does. A value that takes in a secret becomes its own derived podman secret
  (`<workload>-<container>-env`), so no secret is written into a pod's spec.
- fieldRef metadata.name / metadata.namespace -> the literal pod name and namespace.
- initContainers restart under `restartPolicy: Always` -> a run-once pod `<pod>-init`
  over the same volumes, waited for before its pod is played.
- emptyDir is one volume shared by every pod -> a named volume per pod (`<ns>-<pod>-<vol>`).
- Probes do not run in podman 4.3 (HTTPS and gRPC ones cannot) -> removed; scheduling
  constraints (affinity, topology spread) mean nothing on one host -> removed.

Every other kind is refused with its reason (NetworkPolicy, PodDisruptionBudget,
HorizontalPodAutoscaler, ScaledObject, ServiceMonitor, ExternalSecret, anything unknown):
`Plan.report` says what was done with every object, nothing is dropped without a line.
"""

from __future__ import annotations

import base64
import copy
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Obj = dict[str, Any]
Action = Literal["played", "created", "used", "refused"]

NETWORK_DEFAULT = "trix"
LABEL = "io.trix.kubeplay"

REFUSED: Mapping[str, str] = {
    "NetworkPolicy": "podman networks enforce no policy: every pod on the network reaches every other",
    "PodDisruptionBudget": "no scheduler evicts pods on one host: there is no voluntary disruption to budget",
    "ServiceMonitor": "no Prometheus operator: the pods' metrics ports stay reachable on the network",
    "ExternalSecret": "no external secret store: supply the Secret it targets (created with `podman secret create`)",
}

_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_SCHEDULING = ("affinity", "topologySpreadConstraints", "nodeSelector", "tolerations")
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")


class TranslationError(ValueError):
    """The manifests ask for something the translation cannot make (the message says what)."""


@dataclass(frozen=True)
class Disposition:
    """What was done with one rendered object."""

    kind: str
    name: str
    action: Action
    detail: str


@dataclass
class PodPlay:
    """One pod for `podman kube play --network <net>:alias=...`: its documents (the Pod, then the
    ConfigMaps it uses) and where it comes in the start order."""

    name: str
    workload: str
    documents: list[Obj]
    aliases: list[str]
    run_once: bool = False
    wait_for: list[str] = field(default_factory=list)
    published: list[tuple[int, int]] = field(default_factory=list)

    @property
    def pod(self) -> Obj:
        return self.documents[0]

    def network_arg(self, network: str) -> str:
        return ":".join([network, ",".join(f"alias={a}" for a in self.aliases)]) if self.aliases else network


@dataclass
class Plan:
    namespace: str
    network: str
    secrets: dict[str, Obj]
    volumes: list[str]
    pods: list[PodPlay]
    report: list[Disposition]
    edge_url: str | None
    env_secrets: set[str] = field(default_factory=set)

    def secret_json(self, name: str) -> str:
        """What `podman secret create <name> -` reads. podman 4.3 reads a secret two ways: for
        `secretKeyRef` in env, a flat JSON object of key -> base64 value; for a secret volume, a
        Kubernetes Secret whose `data` values it writes out as they stand (so: not base64). A
        secret used both ways is split (`<name>-files` for the volumes)."""
        secret = self.secrets[name]
        if name in self.env_secrets:
            return json.dumps(secret["data"], sort_keys=True)
        plain = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
        return json.dumps({**secret, "data": plain}, sort_keys=True)

    def pod_named(self, name: str) -> PodPlay:
        return next(p for p in self.pods if p.name == name)


def _b64(value: str | bytes) -> str:
    raw = value.encode() if isinstance(value, str) else value
    return base64.b64encode(raw).decode()


def secret_object(name: str, namespace: str, data: Mapping[str, str | bytes]) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "Opaque",
        "data": {k: _b64(v) for k, v in sorted(data.items())},
    }


def _name(obj: Obj) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


def _selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _pods(name: str, replicas: int) -> str:
    return ", ".join(f"{name}-{i}" for i in range(replicas))


def _has_key(secret: Obj | None, key: str) -> bool:
    return secret is not None and (key in secret.get("data", {}) or key in secret.get("stringData", {}))


def _secret_value(secrets: Mapping[str, Obj], name: str, key: str) -> str:
    secret = secrets.get(name)
    if secret is None:
        raise TranslationError(f"Secret {name} is referenced but neither rendered nor supplied")
    if key in secret.get("stringData", {}):
        return str(secret["stringData"][key])
    if key not in secret.get("data", {}):
        raise TranslationError(f"Secret {name} has no key {key}")
    return base64.b64decode(secret["data"][key]).decode()


def expand(text: str, known: Mapping[str, str]) -> tuple[str, set[str]]:
    """`$(VAR)` expanded as the kubelet does (`$$` is a literal `$`, an unknown variable stays
    as written); returns the text and the variables used."""
    used: set[str] = set()

    def one(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        var = m.group(1)
        if var in known:
            used.add(var)
            return known[var]
        return m.group(0)

    return _VAR.sub(one, text), used


class _Translator:
    def __init__(
        self, objs: list[Obj], supplied: Mapping[str, Mapping[str, str | bytes]], network: str, edge_port: int
    ) -> None:
        self.objs = objs
        self.network = network
        self.edge_port = edge_port
        namespaces = {o["metadata"].get("namespace") for o in objs if o.get("metadata", {}).get("namespace")}
        if len(namespaces) > 1:
            raise TranslationError(f"one namespace per run, the manifests use {sorted(namespaces)}")
        self.namespace = str(next(iter(namespaces), "default"))
        self.report: list[Disposition] = []
        self.secrets: dict[str, Obj] = {}
        for obj in objs:
            if obj["kind"] == "Secret":
                # Canonical base64 (kustomize folds long values over lines).
                raw = {k: base64.b64decode(v) for k, v in obj.get("data", {}).items()}
                raw |= {k: str(v).encode() for k, v in obj.get("stringData", {}).items()}
                self.secrets[_name(obj)] = {
                    **secret_object(_name(obj), self.namespace, raw),
                    "type": obj.get("type", "Opaque"),
                }
        for name, data in supplied.items():
            self.secrets[name] = secret_object(name, self.namespace, data)
        missing = referenced_secrets(objs) - set(self.secrets)
        if missing:
            raise TranslationError(
                f"Secrets referenced but neither rendered nor supplied: {', '.join(sorted(missing))}"
            )
        self.config_maps = {_name(o): o for o in objs if o["kind"] == "ConfigMap"}
        self.volumes: list[str] = []
        self.pods: list[PodPlay] = []
        self.min_replicas: dict[str, tuple[int, str]] = {}
        self.jobs: list[str] = []

    def note(self, obj: Obj, action: Action, detail: str) -> None:
        self.report.append(Disposition(obj["kind"], _name(obj), action, detail))

    # -- env and arguments ----------------------------------------------------------------

    def _container_env(self, workload: str, pod_name: str, container: Obj) -> None:
        known: dict[str, str] = {}
        sensitive: set[str] = set()
        for source in container.get("envFrom", []):
            ref = source.get("configMapRef")
            if ref is None:
                raise TranslationError(f"{workload}/{container['name']}: only configMapRef in envFrom")
            cm = self.config_maps.get(ref["name"])
            if cm is None:
                raise TranslationError(f"{workload}: ConfigMap {ref['name']} is not rendered")
            known.update({k: str(v) for k, v in cm.get("data", {}).items()})
        known_from_maps = dict(known)
        derived: dict[str, str] = {}
        env_out: list[Obj] = []
        for entry in container.get("env", []):
            name = entry["name"]
            if "value" in entry:
                value, used = expand(str(entry["value"]), known)
                known[name] = value
                if used & sensitive:
                    sensitive.add(name)
                    derived[name] = value
                    continue
                env_out.append({"name": name, "value": value})
                continue
            source = entry.get("valueFrom", {})
            if "fieldRef" in source:
                path = source["fieldRef"]["fieldPath"]
                literal = {"metadata.name": pod_name, "metadata.namespace": self.namespace}.get(path)
                if literal is None:
                    raise TranslationError(f"{workload}/{name}: fieldRef {path} has no podman equivalent")
                known[name] = literal
                env_out.append({"name": name, "value": literal})
            elif "secretKeyRef" in source:
                ref = source["secretKeyRef"]
                if ref.get("optional") and not _has_key(self.secrets.get(ref["name"]), ref["key"]):
                    continue  # the kubelet leaves an optional, absent key unset
                known[name] = _secret_value(self.secrets, ref["name"], ref["key"])
                sensitive.add(name)
                env_out.append(entry)
            elif "configMapKeyRef" in source:
                ref = source["configMapKeyRef"]
                known[name] = str(self.config_maps[ref["name"]]["data"][ref["key"]])
                env_out.append({"name": name, "value": known[name]})
            else:
                raise TranslationError(f"{workload}/{name}: valueFrom {sorted(source)} has no podman equivalent")
        if derived:
            secret_name = f"{workload}-{container['name']}-env"
            self.secrets[secret_name] = secret_object(secret_name, self.namespace, derived)
            for name in derived:
                env_out.append({"name": name, "valueFrom": {"secretKeyRef": {"name": secret_name, "key": name}}})
        if container.pop("envFrom", None) is not None:
            # podman 4.3 applies envFrom after env (podman issue 27287), so a ConfigMap's key
            # would win over the container's own entry of that name, the reverse of Kubernetes:
            # the ConfigMap's keys become entries, before (and under) the container's own.
            named = {e["name"] for e in env_out}
            env_out = [{"name": k, "value": v} for k, v in known_from_maps.items() if k not in named] + env_out
        if "env" in container or env_out:
            container["env"] = env_out
        plain = {k: v for k, v in known.items() if k not in sensitive}
        for key in ("command", "args"):
            if key in container:
                expanded = []
                for arg in container[key]:
                    text, used = expand(str(arg), {**plain, **{k: known[k] for k in sensitive}})
                    if used & sensitive:
                        raise TranslationError(f"{workload}/{container['name']}: a secret in {key} would be visible")
                    expanded.append(text)
                container[key] = expanded

    # -- pods -----------------------------------------------------------------------------

    def _pod(
        self,
        owner: Obj,
        pod_name: str,
        template: Obj,
        restart: str,
        hostname: tuple[str, str] | None = None,
        claims: Mapping[str, str] | None = None,
    ) -> tuple[Obj, list[Obj]]:
        """The Pod document for one pod of `owner` and the ConfigMaps it uses."""
        workload = _name(owner)
        meta = copy.deepcopy(template.get("metadata", {}))
        spec: Obj = copy.deepcopy(template["spec"])
        labels = {**meta.get("labels", {}), LABEL: self.namespace}
        for key in _SCHEDULING:
            spec.pop(key, None)
        spec["restartPolicy"] = restart
        if hostname is not None:
            spec["hostname"], spec["subdomain"] = hostname
        used_maps: list[Obj] = []
        for volume in spec.get("volumes", []):
            if "emptyDir" in volume:
                claim = f"{self.namespace}-{pod_name}-{volume['name']}"
                del volume["emptyDir"]
                volume["persistentVolumeClaim"] = {"claimName": claim}
                self.volumes.append(claim)
            elif "configMap" in volume:
                volume["configMap"].setdefault("optional", False)
                used_maps.append(self._config_map(workload, volume["configMap"]["name"]))
            elif "secret" in volume:
                if volume["secret"]["secretName"] not in self.secrets:
                    raise TranslationError(f"{workload}: Secret {volume['secret']['secretName']} is not there")
                volume["secret"].setdefault("optional", False)  # podman 4.3 dereferences it unset
            elif "persistentVolumeClaim" not in volume:
                raise TranslationError(f"{workload}: volume {volume['name']} of a kind podman cannot make")
        for template_name, claim in (claims or {}).items():
            spec.setdefault("volumes", []).append(
                {"name": template_name, "persistentVolumeClaim": {"claimName": claim}}
            )
            self.volumes.append(claim)
        for container in [*spec.get("initContainers", []), *spec["containers"]]:
            for key in _PROBES:
                container.pop(key, None)
            container.pop("ports", None)
            for source in container.get("envFrom", []):
                used_maps.append(self._config_map(workload, source["configMapRef"]["name"]))
            self._container_env(workload, pod_name, container)
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name,
                "namespace": self.namespace,
                "labels": labels,
                "annotations": meta.get("annotations", {}),
            },
            "spec": spec,
        }
        unique = {_name(m): m for m in used_maps}
        return pod, [unique[k] for k in sorted(unique)]

    def _config_map(self, workload: str, name: str) -> Obj:
        cm = self.config_maps.get(name)
        if cm is None:
            raise TranslationError(f"{workload}: ConfigMap {name} is not rendered")
        return cm

    def _add(self, owner: Obj, pod_name: str, pod: Obj, maps: list[Obj], run_once: bool) -> PodPlay:
        """The pod, preceded by a run-once `<pod>-init` pod when it has init containers."""
        wait_for: list[str] = []
        inits = pod["spec"].pop("initContainers", None)
        if inits:
            init_pod = copy.deepcopy(pod)
            init_pod["metadata"]["name"] = f"{pod_name}-init"
            init_pod["spec"]["containers"] = inits
            init_pod["spec"]["restartPolicy"] = "Never"
            init_pod["spec"].pop("hostname", None)
            init_pod["spec"].pop("subdomain", None)
            wanted = {m["name"] for c in inits for m in c.get("volumeMounts", [])}
            init_pod["spec"]["volumes"] = [v for v in pod["spec"].get("volumes", []) if v["name"] in wanted]
            names = {v.get("configMap", {}).get("name") for v in init_pod["spec"]["volumes"]}
            names |= {s["configMapRef"]["name"] for c in inits for s in c.get("envFrom", [])}
            init_maps = [m for m in maps if _name(m) in names]
            self.pods.append(PodPlay(f"{pod_name}-init", _name(owner), [init_pod, *init_maps], [], run_once=True))
            wait_for.append(f"{pod_name}-init")
        play = PodPlay(pod_name, _name(owner), [pod, *maps], [], run_once=run_once, wait_for=wait_for)
        self.pods.append(play)
        return play

    def statefulset(self, sts: Obj) -> None:
        name, spec = _name(sts), sts["spec"]
        replicas = int(spec.get("replicas", 1))
        service = spec.get("serviceName")
        for i in range(replicas):
            pod_name = f"{name}-{i}"
            claims = {
                c["metadata"]["name"]: f"{self.namespace}-{c['metadata']['name']}-{pod_name}"
                for c in spec.get("volumeClaimTemplates", [])
            }
            pod, maps = self._pod(
                sts, pod_name, spec["template"], "Always", (pod_name, service) if service else None, claims
            )
            play = self._add(sts, pod_name, pod, maps, run_once=False)
            if service:
                play.aliases += [f"{pod_name}.{service}", f"{pod_name}.{service}.{self.namespace}.svc"]
        self.note(sts, "played", f"pods {_pods(name, replicas)}, each with its own volumes and aliases")

    def job(self, job: Obj) -> None:
        name = _name(job)
        pod, maps = self._pod(job, name, job["spec"]["template"], "Never")
        self._add(job, name, pod, maps, run_once=True)
        self.jobs.append(name)
        self.note(job, "played", f"one pod {name} with restartPolicy Never, waited for before the Deployments")

    def deployment(self, dep: Obj) -> None:
        name = _name(dep)
        if "replicas" in dep["spec"]:
            replicas, why = int(dep["spec"]["replicas"]), "spec.replicas"
        else:
            replicas, why = self.min_replicas.get(name, (1, "the Kubernetes default"))
        for i in range(replicas):
            pod_name = f"{name}-{i}"
            pod, maps = self._pod(dep, pod_name, dep["spec"]["template"], "Always")
            play = self._add(dep, pod_name, pod, maps, run_once=False)
            play.wait_for += self.jobs
        self.note(dep, "played", f"pods {_pods(name, replicas)} ({why})")

    def service(self, svc: Obj) -> str | None:
        """Aliases onto the selected pods; the edge URL when the Service is exposed."""
        name, spec = _name(svc), svc["spec"]
        selector = spec.get("selector", {})
        chosen = [p for p in self.pods if not p.run_once and _selects(selector, p.pod["metadata"]["labels"])]
        if not chosen:
            raise TranslationError(f"Service {name} selects no pod")
        for play in chosen:
            play.aliases += [name, f"{name}.{self.namespace}", f"{name}.{self.namespace}.svc"]
        exposed = spec.get("type") in ("LoadBalancer", "NodePort")
        if not exposed:
            self.note(svc, "used", f"network alias {name} on {', '.join(p.name for p in chosen)}")
            return None
        if len(spec["ports"]) != 1:
            raise TranslationError(f"Service {name}: one port is published, the Service has {len(spec['ports'])}")
        play = chosen[0]  # one host port reaches one pod: the others serve inside the network
        port = spec["ports"][0]
        target = self._container_port(_name(svc), play, port.get("targetPort", port["port"]))
        container, number = target
        container.setdefault("ports", []).append(
            {"containerPort": number, "hostPort": self.edge_port, "hostIP": "127.0.0.1", "protocol": "TCP"}
        )
        play.published.append((self.edge_port, number))
        self.note(svc, "used", f"alias {name}; the edge: host 127.0.0.1:{self.edge_port} -> {play.name}:{number}")
        return f"https://localhost:{self.edge_port}"

    def _container_port(self, svc: str, play: PodPlay, target: int | str) -> tuple[Obj, int]:
        owner = next(o for o in self.objs if o["kind"] == "Deployment" and _name(o) == play.workload)
        for source in owner["spec"]["template"]["spec"]["containers"]:
            for port in source.get("ports", []):
                if target in (port.get("name"), port["containerPort"]):
                    live = next(c for c in play.pod["spec"]["containers"] if c["name"] == source["name"])
                    return live, int(port["containerPort"])
        raise TranslationError(f"Service {svc}: no container port {target}")

    def run(self) -> Plan:
        for obj in self.objs:
            kind = obj["kind"]
            if kind == "HorizontalPodAutoscaler":
                self.min_replicas[obj["spec"]["scaleTargetRef"]["name"]] = (
                    int(obj["spec"].get("minReplicas", 1)),
                    "the HPA's minReplicas",
                )
            elif kind == "ScaledObject":
                self.min_replicas[obj["spec"]["scaleTargetRef"]["name"]] = (
                    int(obj["spec"].get("minReplicaCount", 1)),
                    "the ScaledObject's minReplicaCount",
                )
        order = ("StatefulSet", "Job", "Deployment")
        for kind in order:
            for obj in self.objs:
                if obj["kind"] == kind:
                    getattr(self, kind.lower())(obj)
        edge_url: str | None = None
        for obj in self.objs:
            kind = obj["kind"]
            if kind in order:
                continue
            if kind == "Service":
                edge_url = self.service(obj) or edge_url
            elif kind == "Namespace":
                self.note(obj, "created", f"podman has no namespaces: network {self.network} and {LABEL}={_name(obj)}")
            elif kind == "ConfigMap":
                users = sorted({p.workload for p in self.pods if any(d is obj for d in p.documents[1:])})
                if not users:
                    raise TranslationError(f"ConfigMap {_name(obj)} is used by no pod")
                self.note(obj, "played", f"in the documents of {', '.join(users)}")
            elif kind == "Secret":
                self.note(obj, "created", "podman secret create from its JSON (never played)")
            elif kind == "HorizontalPodAutoscaler":
                self.note(obj, "refused", "no autoscaling in podman: its minReplicas pods are played")
            elif kind == "ScaledObject":
                self.note(obj, "refused", "no KEDA in podman: its minReplicaCount pods are played")
            elif kind in REFUSED:
                self.note(obj, "refused", REFUSED[kind])
            else:
                self.note(obj, "refused", f"{kind}: no podman equivalent is known to this translation")
        # Secrets the pods reference that only the caller supplied (ExternalSecret targets,
        # cert-manager certificates) and the derived ones.
        rendered = {_name(o) for o in self.objs if o["kind"] == "Secret"}
        env_secrets = self._split_secrets()
        for name in sorted(set(self.secrets) - rendered):
            self.report.append(Disposition("Secret", name, "created", "supplied or derived: podman secret create"))
        return Plan(
            namespace=self.namespace,
            network=self.network,
            secrets=self.secrets,
            volumes=self.volumes,
            pods=self.pods,
            report=self.report,
            edge_url=edge_url,
            env_secrets=env_secrets,
        )

    def _split_secrets(self) -> set[str]:
        """The secrets read through env; one also mounted as files gets a `<name>-files` copy
        for its volumes (podman 4.3 reads the two from different JSON shapes)."""
        in_env: set[str] = set()
        in_files: set[str] = set()
        for play in self.pods:
            for container in play.pod["spec"]["containers"]:
                for entry in container.get("env", []):
                    if "secretKeyRef" in entry.get("valueFrom", {}):
                        in_env.add(entry["valueFrom"]["secretKeyRef"]["name"])
            for volume in play.pod["spec"].get("volumes", []):
                if "secret" in volume:
                    in_files.add(volume["secret"]["secretName"])
        for name in sorted(in_env & in_files):
            copy_name = f"{name}-files"
            self.secrets[copy_name] = {
                **self.secrets[name],
                "metadata": {"name": copy_name, "namespace": self.namespace},
            }
            for play in self.pods:
                for volume in play.pod["spec"].get("volumes", []):
                    if volume.get("secret", {}).get("secretName") == name:
                        volume["secret"]["secretName"] = copy_name
        return in_env


def referenced_secrets(objs: Iterable[Obj]) -> set[str]:
    """Every Secret name a workload refers to (env or volume)."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "secretKeyRef" in node:
                found.add(node["secretKeyRef"]["name"])
            if "secretName" in node:
                found.add(node["secretName"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for obj in objs:
        if obj["kind"] in ("Deployment", "StatefulSet", "Job"):
            walk(obj["spec"]["template"])
    return found


def translate(
    objs: list[Obj],
    *,
    supplied_secrets: Mapping[str, Mapping[str, str | bytes]] | None = None,
    image_map: Mapping[str, str] | None = None,
    network: str = NETWORK_DEFAULT,
    edge_port: int = 8443,
) -> Plan:
    """The plan for the rendered `objs`. `supplied_secrets` stands in for Secrets the overlay
    does not render (ExternalSecret targets, cert-manager certificates); `image_map` replaces
    images (no registry can be reached: local builds stand in); an image mapped to "" removes
    its container, said in the workload's report line."""
    objs = copy.deepcopy(objs)
    removed: dict[tuple[str, str], list[str]] = {}
    for obj in objs:
        if obj["kind"] in ("Deployment", "StatefulSet", "Job"):
            spec = obj["spec"]["template"]["spec"]
            for key in ("initContainers", "containers"):
                kept = []
                for container in spec.get(key, []):
                    image = (image_map or {}).get(container["image"], container["image"])
                    if image:
                        kept.append({**container, "image": image})
                    else:
                        removed.setdefault((obj["kind"], _name(obj)), []).append(
                            f"container {container['name']} removed: no image for {container['image']} here"
                        )
                if key in spec:
                    spec[key] = kept
            if not spec["containers"]:
                raise TranslationError(f"{obj['kind']}/{_name(obj)}: every container removed")
    plan = _Translator(objs, supplied_secrets or {}, network, edge_port).run()
    plan.report = [
        Disposition(d.kind, d.name, d.action, "; ".join([d.detail, *removed.get((d.kind, d.name), [])]))
        for d in plan.report
    ]
    return plan

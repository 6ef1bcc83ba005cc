"""`trix up`: the whole platform on loopback, each part its own OS process.

Owns the command: its arguments and their checks; `trix.supervisor.Supervisor` starts NATS,
the provisioner, every service (and the edge), prints each endpoint and a `ready` line once
every service reports SERVING, restarts a process that dies and, on Ctrl-C or SIGTERM,
stops everything. Children run in their own process group and get SIGTERM from the kernel
if `trix up` itself dies (`trix.processes`), so nothing is left orphaned.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from trix.competitions.config import schedule_env
from trix.declarations import SERVICES, ServiceDeclaration, names_of
from trix.supervisor import Supervisor


def add_up_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state-dir", type=Path, default=Path(".state"), help="data folder (default: .state)")
    parser.add_argument("--fresh", action="store_true", help="wipe the state folder first")
    parser.add_argument(
        "--replicas", default="", metavar="NAME=N,...", help="replicas per service, e.g. table=3,timers=2"
    )
    parser.add_argument(
        "--port",
        action="append",
        default=[],
        metavar="NAME=PORT",
        help="fixed gRPC port of a service's first replica (others take the next ports); default: free ports",
    )
    parser.add_argument("--nats-port", type=int, default=0, help="NATS client port (default: a free port)")
    parser.add_argument(
        "--nats-cluster",
        type=int,
        default=1,
        metavar="N",
        help="NATS nodes: 1 (default) or a JetStream cluster of N (3: R3 streams and buckets, as deployed)",
    )
    parser.add_argument("--grace", type=float, default=10.0, help="seconds a process gets to stop (default 10)")
    parser.add_argument("--ready-timeout", type=float, default=120.0, help="seconds to wait for every service")
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    parser.add_argument(
        "--edge",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="Envoy on loopback in front of the gateway: gRPC-Web and HTTP/JSON (default: on if envoy is installed)",
    )
    parser.add_argument("--edge-port", type=int, default=0, help="the edge's HTTP port (default: a free port)")
    parser.add_argument(
        "--web-dir",
        type=Path,
        default=None,
        help="the built browser client served on the edge's origin (default: web/dist of this checkout)",
    )
    parser.add_argument(
        "--tls",
        action="store_true",
        help="TLS everywhere: a local CA and certificates in the state folder's tls/, the edge HTTPS "
        "(h2 and HTTP/1.1), the services' gRPC and NATS TLS only; clients take the printed CA (--ca)",
    )
    parser.add_argument(
        "--competitions-schedule",
        default=None,
        metavar="FILE",
        help="the system's scheduled competitions (default: $TRIX_COMPETITIONS_SCHEDULE if set, else the dev "
        "schedule: a free 16-entrant knockout every 10 minutes); '' for none",
    )
    parser.add_argument(
        "--edge-stream-idle-timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="seconds of silence after which the edge ends a stream (default 600; clients resume)",
    )


def run_up(args: argparse.Namespace) -> int:
    try:
        replicas = parse_assignments(args.replicas, "--replicas", minimum=1)
        ports = parse_assignments(",".join(args.port), "--port", minimum=1)
    except ValueError as err:
        print(f"trix up: {err}", file=sys.stderr)
        return 2
    if not 1 <= args.nats_cluster <= 5:
        print("trix up: --nats-cluster: must be 1..5 (3 is the deployed cluster)", file=sys.stderr)
        return 2
    supervisor = Supervisor(
        state_dir=Path(args.state_dir).resolve(),
        fresh=args.fresh,
        replicas=replicas,
        ports=ports,
        nats_port=args.nats_port,
        grace_s=args.grace,
        ready_timeout_s=args.ready_timeout,
        log_level=args.log_level,
        edge=_edge_wanted(args.edge),
        edge_port=args.edge_port,
        web_dir=args.web_dir,
        edge_stream_idle_s=args.edge_stream_idle_timeout,
        nats_cluster=args.nats_cluster,
        tls=args.tls,
        service_env=schedule_env(os.environ, args.competitions_schedule),
    )
    return supervisor.run()


def _edge_wanted(flag: bool | None) -> bool:
    from trix.edge import envoy_binary

    return envoy_binary() is not None if flag is None else flag


def parse_assignments(
    text: str, flag: str, *, minimum: int, services: Sequence[ServiceDeclaration] = SERVICES
) -> dict[str, int]:
    """`table=3,timers=2` -> {"table": 3, "timers": 2}; names must be declared services."""
    known = names_of(services)
    result: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or name not in known:
            raise ValueError(f"{flag}: expected NAME=NUMBER with NAME one of {', '.join(known)}: {item!r}")
        try:
            number = int(value)
        except ValueError:
            raise ValueError(f"{flag}: not an integer: {item!r}") from None
        if number < minimum:
            raise ValueError(f"{flag}: must be >= {minimum}: {item!r}")
        result[name] = number
    return result

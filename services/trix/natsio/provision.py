"""`python -m trix.natsio.provision`: create or update every declared stream and bucket (ADR 0014).

The only process that connects as the `provisioner` NATS user, the only user allowed to
create, update or delete streams. `--watch` re-provisions after every reconnect (`trix up`;
the `nats-provisioner` Deployment). Environment: TRIX_NATS_URL, TRIX_NATS_STREAM_REPLICAS
(1..5, default 1). Exit codes: 0 once provisioned (or after SIGTERM with `--watch`), 1 if
NATS was not reached within `--timeout`, 2 on a bad configuration value (named).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import trix
from trix.natsio.connection import NatsConnection
from trix.runtime.config import ConfigError, env_int, env_str


async def run(url: str, replicas: int, *, watch: bool, timeout_s: float, ca_file: str = "") -> int:
    nats = NatsConnection(url, "provisioner", stream_replicas=replicas, ca_file=ca_file)
    try:
        await asyncio.wait_for(nats.connect(give_up_after_s=timeout_s), timeout_s * 2)
    except Exception as exc:  # noqa: BLE001 - reported, exit 1
        print(f"provision: could not provision through NATS: {type(exc).__name__}", file=sys.stderr)
        await nats.drain()
        return 1
    print("provision: every declared stream and bucket is provisioned", flush=True)
    if watch:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    await nats.drain()
    return 0


def provision_now(url: str, *, replicas: int = 1, timeout_s: float = 60.0, ca_file: str = "") -> None:
    """Run the provisioner once as its own process (`trix up` before its services, the tests'
    servers); raises RuntimeError with its output if it fails."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIX_")}
    root = str(Path(trix.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH", "")]))
    env.update(TRIX_NATS_URL=url, TRIX_NATS_STREAM_REPLICAS=str(replicas), TRIX_LOG_LEVEL="warning")
    if ca_file:
        env["TRIX_TLS_CA_FILE"] = ca_file
    argv = [sys.executable, "-m", "trix.natsio.provision", "--timeout", str(timeout_s)]
    done = subprocess.run(argv, env=env, capture_output=True, timeout=timeout_s * 3, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"provisioning failed ({done.returncode}): {done.stderr.decode(errors='replace')[-2000:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trix.natsio.provision", description=__doc__.split("\n")[0])
    parser.add_argument("--watch", action="store_true", help="keep running and re-provision after each reconnect")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to reach NATS (default 60)")
    args = parser.parse_args(argv)
    try:
        url = env_str(os.environ, "TRIX_NATS_URL", "nats://127.0.0.1:4222")
        replicas = env_int(os.environ, "TRIX_NATS_STREAM_REPLICAS", 1, minimum=1, maximum=5)
        ca_file = env_str(os.environ, "TRIX_TLS_CA_FILE", "")
    except ConfigError as err:
        print(f"provision: {err}", file=sys.stderr)
        return 2
    return asyncio.run(run(url, replicas, watch=args.watch, timeout_s=args.timeout, ca_file=ca_file))


if __name__ == "__main__":
    sys.exit(main())

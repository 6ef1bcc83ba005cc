"""The floor baseline: the cheapest chain that does an action's work (ADR 0024).

Measured in the same run as the platform, so the summary states the platform's CPU per
action as a ratio to it. One action: a gRPC stream message in at an edge process, one core
NATS publish to a table process, one JetStream append (fsynced, PubAck awaited), one event
publish back and four gRPC stream writes out; no protobuf, rules or checks. Owns
`floor_baseline` (its own nats-server, edge, table and client processes; CPU read via
psutil) and the process entry points. The modes (`CHAIN_*`, `CONNECTIONS_*`): ADR 0024.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import random
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import grpc

from trix.gateway.config import GRPC_CORE_EXPERIMENTS, GRPC_EXPERIMENTS_ENV
from trix.loadtest.bots import CHANNEL_OPTIONS
from trix.loadtest.echo import serve_stream
from trix.natsio import serverconf
from trix.runtime import eventloop

METHOD = "/trix.loadtest.Floor/Stream"
STREAM = "FLOOR_LOG"
CHAIN_SPLIT = "split"
CHAIN_SINGLE = "single"
CHAINS = (CHAIN_SPLIT, CHAIN_SINGLE)
CONNECTIONS_SEAT = "seat"
CONNECTIONS_SHARED = "shared"
CONNECTIONS = (CONNECTIONS_SEAT, CONNECTIONS_SHARED)
TABLES_PER_CHANNEL = 20
"""`CONNECTIONS_SHARED`: the tables whose streams share one client connection."""
OPENS_PER_S = 400
"""Tables whose four streams the client opens per second (the bots' ramp spreads sign-ins the
same way): opening a thousand tables' 4,000 streams at once made grpc core reset some of them
before their first write (`INTERNAL: Failed "execute_batch"` on the client), and the floor
failed at 1,000 tables."""
JOIN_ATTEMPTS = 3
"""How often a table opens its four streams before the floor gives up (ADR 0024 addendum)."""


def opens_per_s(connections: str) -> float:
    """Tables opened per second: a quarter of `OPENS_PER_S` when each stream connects on its own
    (four connections a table; the bots' ramp opens 50 tables' a second)."""
    return OPENS_PER_S / 4 if connections == CONNECTIONS_SEAT else OPENS_PER_S


def warmup_s(tables: int, connections: str = CONNECTIONS_SEAT) -> float:
    """The ramp (every table open, one at a time) and a short settle before the measured window,
    for the client and for the CPU reading alike."""
    return tables / opens_per_s(connections) + min(5.0, 1.0 + tables / 200)


async def _append_and_fan_out(js: Any, nc: Any, table: str, payload: bytes) -> None:
    await js.publish(f"floor.log.{table}", payload)  # one fsynced append, acked
    await nc.publish(f"floor.evt.{table}", payload)  # one core fan-out


async def _serve(nats_url: str, chain: str, port_out: Any, stop: Any) -> None:
    """The edge: the seats' gRPC streams; in `CHAIN_SINGLE` also the table's work."""
    from nats.js.api import StorageType, StreamConfig

    from trix.natsio.coalesce import new_client, subscribe_direct
    from trix.runtime.config import RuntimeConfig

    # The gateway's read window (ADR 0019): the floor reads as the chain it stands beside.
    nc = new_client(RuntimeConfig.from_env("gateway").nats_read_window_s)
    await nc.connect(nats_url)
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name=STREAM, subjects=["floor.log.>"], storage=StorageType.FILE))
    seats: dict[str, list[asyncio.Queue[bytes]]] = {}

    def on_event(msg: Any) -> None:
        for q in seats.get(msg.subject.rsplit(".", 1)[1], ()):
            q.put_nowait(msg.data)

    await subscribe_direct(nc, "floor.evt.*", on_event)  # delivered as the platform's are (ADR 0019)

    async def stream(requests: AsyncIterator[bytes], _context: grpc.aio.ServicerContext[bytes, bytes]) -> Any:
        out: asyncio.Queue[bytes] = asyncio.Queue()
        table = ""

        async def read() -> None:
            nonlocal table
            async for payload in requests:
                if payload.startswith(b"J"):
                    table = payload[1:].decode()
                    seats.setdefault(table, []).append(out)
                    out.put_nowait(b"ok")
                    continue
                if chain == CHAIN_SINGLE:
                    await _append_and_fan_out(js, nc, table, payload)
                else:
                    await nc.publish(f"floor.cmd.{table}", payload)  # the hop to the table process

        reader = asyncio.ensure_future(read())
        try:
            while True:
                yield await out.get()
        finally:
            reader.cancel()
            with contextlib.suppress(ValueError, KeyError):
                seats[table].remove(out)

    try:
        # The gateway's server options that bear on its cost: no bandwidth-delay probing (its PINGs
        # on every connection), as `trix.gateway.__main__` serves.
        await serve_stream("trix.loadtest.Floor", stream, port_out, stop, [("grpc.http2.bdp_probe", 0)])
    finally:
        await nc.close()


async def _serve_table(nats_url: str, ready: Any, stop: Any) -> None:
    """The table process of `CHAIN_SPLIT`: each command appended (acked), then fanned out; the
    tables' commands concurrently (a subscription's callbacks run one at a time)."""
    from trix.natsio.coalesce import new_client, subscribe_direct
    from trix.runtime.config import RuntimeConfig
    from trix.runtime.tasks import start_kept

    nc = new_client(RuntimeConfig.from_env("table").nats_read_window_s)  # the table's read window (ADR 0019)
    await nc.connect(nats_url)
    js = nc.jetstream()
    running: set[asyncio.Task[None]] = set()

    def on_command(msg: Any) -> None:
        start_kept(running, _append_and_fan_out(js, nc, msg.subject.rsplit(".", 1)[1], msg.data))

    await subscribe_direct(nc, "floor.cmd.*", on_command)
    await nc.flush()
    ready.set()
    try:
        await asyncio.get_running_loop().run_in_executor(None, stop.wait)
    finally:
        await nc.close()


def floor_server_main(nats_url: str, chain: str, port_out: Any, stop: Any) -> None:
    with contextlib.suppress(KeyboardInterrupt):
        eventloop.run(_serve(nats_url, chain, port_out, stop))


def floor_table_main(nats_url: str, ready: Any, stop: Any) -> None:
    with contextlib.suppress(KeyboardInterrupt):
        eventloop.run(_serve_table(nats_url, ready, stop))


def _channel(target: str) -> grpc.aio.Channel:
    return grpc.aio.insecure_channel(target, options=list(CHANNEL_OPTIONS))  # the bots' (a phone's)


async def _drive(target: str, tables: int, think: tuple[float, float], seconds: float, connections: str) -> int:
    """`tables` tables of four streams; each table acts once per think time (one seat after
    the other, the next action once the last one's event came back). Actions done in the
    last `seconds` (after a short ramp). `CONNECTIONS_SEAT`: each stream on a connection of
    its own, as each of the platform's players (a bot, a phone) is; `CONNECTIONS_SHARED`: a
    table's four streams, and TABLES_PER_CHANNEL tables', on one connection (thousands of
    streams on one HTTP/2 connection fail in grpc core)."""
    seat_conns = connections == CONNECTIONS_SEAT
    shared = [] if seat_conns else [_channel(target) for _ in range(max(1, -(-tables // TABLES_PER_CHANNEL)))]
    channels: list[grpc.aio.Channel] = list(shared)
    rng = random.Random(16)
    counted = 0
    began = time.monotonic()
    start_at = began + warmup_s(tables, connections)
    end_at = start_at + seconds

    async def join(index: int) -> list[Any]:
        """The table's four streams, each told its table. A stream grpc core cancels or resets
        while thousands open (`CANCELLED`, `INTERNAL`) is opened again, as a client reconnects."""
        for attempt in range(JOIN_ATTEMPTS):
            if seat_conns:
                own = [_channel(target) for _ in range(4)]
                channels.extend(own)
                for channel in own:  # connected first, as a bot's sign-in connects it before its stream
                    await channel.channel_ready()
                calls: list[Any] = [channel.stream_stream(METHOD)() for channel in own]
            else:
                factory: Any = shared[index // TABLES_PER_CHANNEL].stream_stream(METHOD)
                calls = [factory() for _ in range(4)]
            try:
                for call in calls:
                    await call.write(b"J" + str(index).encode())
                    await call.read()
                return calls
            except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
                for call in calls:
                    call.cancel()
                if attempt == JOIN_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(0.5)
        raise AssertionError("unreachable")

    async def table(index: int) -> None:
        nonlocal counted
        await asyncio.sleep(max(0.0, began + index / opens_per_s(connections) - time.monotonic()))  # the ramp
        calls = await join(index)
        seat = 0
        while time.monotonic() < end_at:
            await asyncio.sleep(rng.uniform(*think))
            await calls[seat].write(b"A" * 48)
            for call in calls:  # every seat gets the event
                await call.read()
            if start_at <= time.monotonic() < end_at:
                counted += 1
            seat = (seat + 1) % 4
        for call in calls:
            call.cancel()

    try:
        await asyncio.gather(*(table(i) for i in range(tables)))
    finally:
        for channel in channels:
            await channel.close()
    return counted


def floor_client_main(
    target: str, tables: int, think: tuple[float, float], seconds: float, connections: str, out: Any
) -> None:
    out.put(eventloop.run(_drive(target, tables, think, seconds, connections)))


def _cpu_s(proc: Any) -> float:
    times = proc.cpu_times()
    return float(times.user + times.system)


@contextlib.contextmanager
def spawned_on_core_poller(environ: MutableMapping[str, str]) -> Iterator[None]:
    """Processes started within are spawned with the gateway's gRPC core settings (ADR 0022:
    grpc reads them as it is imported, in the child), then the environment is as it was; an
    operator's own GRPC_EXPERIMENTS is kept, as the gateway keeps it. The floor's server runs
    on them, so the floor ratio compares like with like, and so do the bot workers (their
    4,000 client connections, 13 % less CPU per action than on the EventEngine)."""
    before = environ.get(GRPC_EXPERIMENTS_ENV)
    environ.setdefault(GRPC_EXPERIMENTS_ENV, GRPC_CORE_EXPERIMENTS)
    try:
        yield
    finally:
        if before is None:
            environ.pop(GRPC_EXPERIMENTS_ENV, None)


def floor_baseline(
    ctx: Any,
    nats_binary: str,
    free_port: Any,
    tables: int,
    think: tuple[float, float],
    seconds: float,
    chain: str = CHAIN_SPLIT,
    connections: str = CONNECTIONS_SEAT,
) -> dict[str, Any]:
    """Run the floor (see the module docstring); its CPU ms per action (in all and by process)
    and actions/s."""
    if chain not in CHAINS:
        raise ValueError(f"unknown floor chain {chain!r} (one of {', '.join(CHAINS)})")
    if connections not in CONNECTIONS:
        raise ValueError(f"unknown floor connections {connections!r} (one of {', '.join(CONNECTIONS)})")
    import psutil

    with tempfile.TemporaryDirectory(prefix="trix-floor-") as tmp:
        port = free_port()
        conf = Path(tmp) / "nats.conf"
        conf.write_text(
            f'listen: 127.0.0.1:{port}\njetstream {{\n  store_dir: "{Path(tmp) / "js"}"\n  sync_interval: always\n}}\n'
        )
        nats_proc = subprocess.Popen(
            [nats_binary, "-c", str(conf)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=serverconf.process_env(os.environ),  # the platform's nats-server's (ADR 0023)
        )
        port_q, stop, out = ctx.Queue(), ctx.Event(), ctx.Queue()
        url = f"nats://127.0.0.1:{port}"
        server = ctx.Process(target=floor_server_main, args=(url, chain, port_q, stop), daemon=True)
        table_ready = ctx.Event()
        table = ctx.Process(target=floor_table_main, args=(url, table_ready, stop), daemon=True)
        client = None
        try:
            deadline = time.monotonic() + 30
            while True:
                with contextlib.suppress(OSError):
                    import socket

                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError("the floor's nats-server did not start")
                time.sleep(0.05)
            with spawned_on_core_poller(os.environ):
                server.start()
            grpc_port = port_q.get(timeout=30)  # the edge is up: its stream exists
            watched = {"edge": psutil.Process(server.pid), "nats": psutil.Process(nats_proc.pid)}
            if chain == CHAIN_SPLIT:
                table.start()
                if not table_ready.wait(30):
                    raise RuntimeError("the floor's table process did not start")
                watched["table"] = psutil.Process(table.pid)
            client = ctx.Process(
                target=floor_client_main,
                args=(f"127.0.0.1:{grpc_port}", tables, think, seconds, connections, out),
                daemon=True,
            )
            client.start()
            time.sleep(warmup_s(tables, connections))  # the ramp and settle the client does not count
            cpu0 = {name: _cpu_s(p) for name, p in watched.items()}
            waited_until = time.monotonic() + seconds + 120
            while True:  # the client's count, or its death (a crash must not hold the run up)
                try:
                    actions = int(out.get(timeout=1.0))
                    break
                except queue.Empty:
                    if not client.is_alive() or time.monotonic() > waited_until:
                        raise RuntimeError("the floor's client ended without a result") from None
            cpu1 = {name: _cpu_s(p) for name, p in watched.items()}
        finally:
            stop.set()
            if client is not None:
                client.join(10)
            for proc in (server, table):
                if proc.pid is None:
                    continue
                proc.join(5)
                if proc.is_alive():
                    proc.kill()
            nats_proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                nats_proc.wait(5)
            if nats_proc.poll() is None:
                nats_proc.kill()
    spent = {name: (cpu1[name] - cpu0[name]) * 1000 / actions if actions else 0.0 for name in cpu1}
    return {
        "floor_ms_per_action": round(sum(spent.values()), 3),
        "floor_ms_per_action_by_process": {name: round(ms, 3) for name, ms in spent.items()},
        "floor_actions_per_s": round(actions / seconds, 1),
        "floor_tables": tables,
        "floor_processes": len(watched),  # the nats-server's included
        "floor_connections": connections,
    }

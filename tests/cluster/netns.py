"""Hosts on one machine (issue 19): network namespaces joined by a bridge, so that a
partition is a real network cut, not a killed process.

`Hosts(n)` makes `n` namespaces, each with one veth into a bridge of the root namespace
(processes there, the other services and the test, reach every host through it), an
address 10.<a>.<b>.<10+i> on a random private /24, and its own loopback. `cut(i)` takes
host i's veth down: nothing reaches it and it reaches nothing (its TCP connections stall,
they are not reset), until `heal(i)`. `argv(i, cmd)` runs a command inside host i
(`ip netns exec`). Needs root and `ip` (iproute2); `Hosts.available()` says whether this
machine has both. Every namespace, link and the bridge go in `close()`.

Only `make fault-nats` uses it (loopback stays the default everywhere else).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


class Hosts:
    def __init__(self, count: int, seed: int | None = None) -> None:
        rng = random.Random(seed)
        tag = f"{os.getpid() % 10000:04d}{rng.randrange(100):02d}"
        self.bridge = f"trxb{tag}"
        self.names = [f"trx{tag}h{i}" for i in range(count)]
        self.links = [f"trx{tag}v{i}" for i in range(count)]
        a, b = 64 + rng.randrange(64), rng.randrange(256)
        self.net = f"10.{a}.{b}"
        self.gateway_ip = f"{self.net}.1"
        self.ips = [f"{self.net}.{10 + i}" for i in range(count)]
        self.cut_hosts: set[int] = set()
        self.made: list[tuple[str, str]] = []

    @staticmethod
    def available() -> bool:
        return os.geteuid() == 0 and shutil.which("ip") is not None

    def open(self) -> Hosts:
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            self.made.append(("link", self.bridge))
            _ip("addr", "add", f"{self.gateway_ip}/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for name, link, address in zip(self.names, self.links, self.ips, strict=True):
                _ip("netns", "add", name)
                self.made.append(("netns", name))
                _ip("link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", name)
                self.made.append(("link", link))
                _ip("link", "set", link, "master", self.bridge, "up")
                _ip("-n", name, "addr", "add", f"{address}/24", "dev", "eth0")
                _ip("-n", name, "link", "set", "eth0", "up")
                _ip("-n", name, "link", "set", "lo", "up")
                _ip("-n", name, "route", "add", "default", "via", self.gateway_ip)
        except Exception:
            self.close()
            raise
        return self

    def argv(self, i: int, cmd: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.names[i], *cmd]

    def cut(self, i: int) -> None:
        _ip("link", "set", self.links[i], "down")
        self.cut_hosts.add(i)

    def heal(self, i: int) -> None:
        _ip("link", "set", self.links[i], "up")
        self.cut_hosts.discard(i)

    def close(self) -> None:
        for kind, name in reversed(self.made):
            args = ("link", "del", name) if kind == "link" else ("netns", "del", name)
            subprocess.run(["ip", *args], capture_output=True, check=False, timeout=30)
        self.made.clear()

    def __enter__(self) -> Hosts:
        return self.open()

    def __exit__(self, *_exc: object) -> None:
        self.close()

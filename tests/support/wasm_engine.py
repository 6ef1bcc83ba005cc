"""The rules engine compiled to WebAssembly (web/build/trix_engine.wasm, `make web-wasm`), run
from Python with wasmtime, behind the part of docs/engine-api.md that `trix.records.replay`
uses: so the tests put the browser's engine through the same replay as the native one.

`WasmGame(variant, options, decks)` fits `replay(record, WasmGame, trix.engine.Options)`.
A refusal raises `WasmIllegal` with the native binding's message text (engine/binding/_core.c),
so a refused record reads the same from both engines.
"""

from __future__ import annotations

import struct
import subprocess
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import wasmtime

REPO = Path(__file__).resolve().parents[2]
WASM = REPO / "web" / "build" / "trix_engine.wasm"

SUITS = "CDHS"
RANKS = "23456789TJQKA"
CONTRACTS = ("KING", "QUEENS", "DIAMONDS", "TRICKS", "TRIX", "COMPLEX")
PHASE_CHOOSE, PHASE_DOUBLING, PHASE_PLAY, PHASE_AWAITING, PHASE_GAME_OVER = range(5)
EVENT_SIZE = 24


def card_text(card: int) -> str:
    return RANKS[card % 13] + SUITS[card // 13]


@cache
def wasm_module() -> tuple[wasmtime.Engine, wasmtime.Module]:
    """The compiled module; built with `make web-wasm` when absent (zig from the dev extras)."""
    if not WASM.is_file():
        subprocess.run(["make", "-s", "web-wasm"], cwd=REPO, check=True, timeout=600)
    engine = wasmtime.Engine()
    return engine, wasmtime.Module.from_file(engine, str(WASM))


class WasmIllegal(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class WasmInstance:
    """One instance of the module: one game at a time."""

    def __init__(self) -> None:
        engine, module = wasm_module()
        self.store = wasmtime.Store(engine)
        instance = wasmtime.Instance(self.store, module, [])
        self.exports = instance.exports(self.store)
        memory = self.exports["memory"]
        assert isinstance(memory, wasmtime.Memory)
        self.memory = memory
        self.call("_initialize", result=False)  # the reactor's start (WASI reactor model)
        self.buffer = self.call("tw_buffer")
        assert self.call("tw_event_size") == EVENT_SIZE

    def call(self, name: str, *args: int, result: bool = True) -> int:
        fn = self.exports[name]
        assert isinstance(fn, wasmtime.Func)
        value = fn(self.store, *args)
        if not result:
            return 0
        assert isinstance(value, int)
        return value

    def read(self, address: int, n: int) -> bytes:
        return bytes(self.memory.read(self.store, address, address + n))

    def write(self, address: int, data: bytes) -> None:
        self.memory.write(self.store, data, address)

    def events(self) -> list[tuple[int, int, int, int, tuple[int, ...], tuple[int, ...]]]:
        n = self.call("tw_n_events")
        raw = self.read(self.call("tw_events"), n * EVENT_SIZE)
        out = []
        for i in range(n):
            kind, seat, a, b, *rest = struct.unpack_from("<8B4i", raw, i * EVENT_SIZE)
            out.append((kind, seat, a, b, tuple(rest[:4]), tuple(rest[4:])))
        return out

    def snapshot(self) -> bytes:
        n = self.call("tw_snapshot")
        assert n > 0, n
        return self.read(self.buffer, n)

    def restore(self, data: bytes) -> int:
        self.write(self.buffer, data)
        return self.call("tw_restore", len(data))


class WasmGame:
    """docs/engine-api.md's `Game`, as far as `trix.records.replay` reads it."""

    def __init__(self, variant: int, options: Any, decks: Sequence[Sequence[Sequence[int]]] = ()) -> None:
        self.w = WasmInstance()
        status = self.w.call(
            "tw_init",
            int(variant),
            int(options.doubling),
            int(options.doubling_reveal),
            int(options.doubling_self_take),
            int(options.team_tiebreak),
            int(options.partnership_trix_early_end),
        )
        if status:
            raise ValueError(f"tw_init: status {status}")
        for hands in decks:
            self.w.write(self.w.buffer, bytes(c for hand in hands for c in hand))
            status = self.w.call("tw_provide")
            if status:
                raise ValueError(f"hands must be 4 x 13 distinct card ids partitioning 0..51 (status {status})")

    @property
    def phase(self) -> int:
        return self.w.call("tw_phase")

    @property
    def deal_index(self) -> int:
        return self.w.call("tw_deal_index")

    @property
    def owner(self) -> int | None:
        owner = self.w.call("tw_owner")
        return None if owner < 0 else owner

    def to_act(self) -> tuple[int, ...]:
        n = self.w.call("tw_to_act")
        return tuple(self.w.read(self.w.buffer, n))

    def legal_actions(self, seat: int) -> list[int]:
        n = self.w.call("tw_legal_actions", seat)
        return list(self.w.read(self.w.buffer, n))

    def apply(self, seat: int, action: int) -> list[tuple[Any, ...]]:
        status = self.w.call("tw_apply", seat, action)
        if status:
            raise self._illegal(status, seat, action, self.w.call("tw_detail"))
        return [_event_tuple(e) for e in self.w.events()]

    def leave(self, seat: int) -> list[tuple[Any, ...]]:
        status = self.w.call("tw_leave", seat)
        if status:
            raise WasmIllegal(status, "game is over" if status == 10 else f"bad seat ({seat})")
        return [_event_tuple(e) for e in self.w.events()]

    def totals(self) -> tuple[int, int, int, int]:
        t = [self.w.call("tw_total", s) for s in range(4)]
        return (t[0], t[1], t[2], t[3])

    def ranking(self) -> tuple[int, int, int, int] | None:
        if self.phase != PHASE_GAME_OVER:
            return None
        r = [self.w.call("tw_rank", s) for s in range(4)]
        return (r[0], r[1], r[2], r[3])

    def snapshot(self) -> bytes:
        return self.w.snapshot()

    def _illegal(self, status: int, seat: int, action: int, detail: int) -> WasmIllegal:
        """engine/binding/_core.c raise_status's texts, from the status and its detail."""
        phase = self.phase
        messages = {
            1: lambda: f"not your turn (seat {detail} to act)",
            3: lambda: f"card not in hand ({card_text(action)})",
            4: lambda: f"must follow suit ({SUITS[detail]})",
            5: lambda: f"not playable on the layout ({card_text(action)})",
            6: lambda: f"contract already played in this kingdom ({CONTRACTS[action - 52]})",
            7: lambda: f"contract not in this variant ({CONTRACTS[action - 52]})",
            8: lambda: f"card cannot be doubled ({card_text(max(detail, 0))})",
            9: lambda: "seat already answered",
            10: lambda: "game is over",
            11: lambda: f"bad action ({action})",
            12: lambda: f"bad seat ({seat})",
            17: lambda: "deal has ended",
        }
        if status == 2:
            if action < 52:
                text = {PHASE_CHOOSE: "no contract chosen yet", PHASE_DOUBLING: "doubling not finished"}.get(
                    phase, "deal not dealt yet"
                )
            else:
                text = "no contract to choose now" if action < 64 else "no doubling answer expected now"
            return WasmIllegal(2, text)
        if status not in messages:
            raise RuntimeError(f"trix engine error {status}")
        return WasmIllegal(2 if status == 17 else status, messages[status]())


def _event_tuple(e: tuple[int, int, int, int, tuple[int, ...], tuple[int, ...]]) -> tuple[Any, ...]:
    """The raw event: (kind, seat, a, b, r, v); replay reads kind 8 (DEAL_SCORED)'s scores as [2]."""
    kind, seat, a, b, r, v = e
    if kind == 8:
        return (kind, a, v)
    return (kind, seat, a, b, r, v)

"""Issue 18, finding 4: one internal token format with a role, a key per role and, for service
tokens, per service (`trix.runtime.identity`, ADR 0028). A compromised gateway holds only the
player-role key and its NATS user: on a real table service it cannot get a service's powers
(read every seat's hand, act or leave for a seat, create a table), and every service refuses
to start, with exit code 2 naming the variable, when a key it needs is missing."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest
from security_support import IN_PROCESS, REFUSED, Backend, bare_nats, connected, report

from support.keys import SuiteKeys
from support.processes import stop_process
from trix.declarations import KEYS_OF, PUBLIC_KEYS_OF
from trix.errors import PermissionDenied, Unauthenticated
from trix.natsio import subjects
from trix.processes import free_port
from trix.runtime.config import ConfigError
from trix.runtime.identity import (
    ADMIN,
    GATEWAY_KEY_ENV,
    ROLE_PLAYER,
    ROLE_SERVICE,
    SERVICE_KEY_ENV,
    TOKEN_HEADER,
    Keys,
    VerifiedTokens,
    load_signing_key,
    public_key_env,
    sign,
    sign_invitation,
    sign_service,
    verify,
    verify_invitation,
)
from trix.v1 import common_pb2, table_pb2

REPO = Path(__file__).resolve().parents[2]
KEYS = SuiteKeys("identity-tests")
PLAYER_KEY = KEYS.player.decode()
PLAYERS = ("ann", "ben", "cat", "dan")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIX_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "services"), env.get("PYTHONPATH", "")]))
    env.update(TRIX_METRICS_PORT="-1", TRIX_LOG_LEVEL="warning", TRIX_SHUTDOWN_GRACE_S="1", TRIX_DRAIN_DELAY_S="0")
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def nats_backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    server = bare_nats(tmp_path_factory.mktemp("identity-nats"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def table_process(nats_backend: Backend, tmp_path: Path) -> Iterator[None]:
    """A real `python -m trix.table` on its own NATS user with its keys (`SuiteKeys.env`)."""
    env = _env(TRIX_NATS_URL=nats_backend.url("table"), TRIX_GRPC_PORT=str(free_port()), **KEYS.env("table"))
    with open(tmp_path / "table.log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "trix.table"], env=env, stdout=log, stderr=log)
    try:
        yield
    finally:
        stop_process(proc, 15)


async def _command(nc: nats.aio.client.Client, table_id: str, command: table_pb2.TableCommand, token: str) -> str:
    """The table's answer: "ok" or the error kind."""
    for _ in range(300):  # the table process may still be starting
        try:
            msg = await nc.request(
                subjects.table_command(table_id), command.SerializeToString(), timeout=10, headers={TOKEN_HEADER: token}
            )
        except (nats.errors.NoRespondersError, nats.errors.TimeoutError):
            await _sleep()
            continue
        reply = table_pb2.TableCommandReply.FromString(msg.data)
        if reply.HasField("error") and reply.error.kind == "Unavailable":
            await _sleep()
            continue
        return reply.error.kind if reply.HasField("error") else "ok"
    raise AssertionError("the table never answered")


async def _sleep() -> None:
    await asyncio.sleep(0.1)


def _create(table_id: str) -> table_pb2.TableCommand:
    seats = [common_pb2.Seat(index=s, player_id=PLAYERS[s]) for s in range(4)]
    request = table_pb2.CreateTableRequest(table_id=table_id, variant=common_pb2.VARIANT_COMPLEX, seats=seats)
    return table_pb2.TableCommand(create_table=request)


def _view(table_id: str, seat: int) -> table_pb2.TableCommand:
    return table_pb2.TableCommand(get_seat_view=table_pb2.GetSeatViewRequest(table_id=table_id, seat=seat))


async def test_a_compromised_gateway_cannot_call_as_a_service(nats_backend: Backend, table_process: None) -> None:
    """Everything the gateway holds (its NATS user, the player-role key) forges no service
    token: a service token MACed with the player key is refused on every service power."""
    table_id = "gw-victim"
    legit = KEYS.token(ROLE_SERVICE, "table")  # the table's own, as on a MatchFormed
    async with connected(nats_backend, "timers") as platform:  # a real service creates the table
        assert await _command(platform.nc, table_id, _create(table_id), legit) == "ok"
        operator = KEYS.token(ROLE_SERVICE, "admin")
        assert await _command(platform.nc, table_id, _view(table_id, 1), operator) == "ok"  # the operators see a seat
    forged = {name: KEYS.player_key_forgery(name) for name in ("table", "timers")}
    header = table_pb2.ActionHeader(table_id=table_id, seat=1, action_id="forged-leave", last_seen_sequence=0)
    attacks = {
        "read another seat's hand as a service": (_view(table_id, 1), forged["timers"]),
        "auto-act for a seat": (
            table_pb2.TableCommand(auto_act=table_pb2.AutoActRequest(table_id=table_id, seat=1, turn_seq=1)),
            forged["timers"],
        ),
        "leave a seat for its player": (
            table_pb2.TableCommand(leave_table=table_pb2.LeaveTableRequest(header=header)),
            forged["timers"],
        ),
        "create a table": (_create("gw-forged-table"), forged["table"]),
    }
    lines = []
    async with connected(nats_backend, "gateway") as gateway:
        for attack, (command, token) in attacks.items():
            kind = await _command(gateway.nc, table_id if "create" not in attack else "gw-forged-table", command, token)
            outcome = REFUSED if kind == "Unauthenticated" else f"answered {kind}"
            lines.append(report(nats_backend, f"gateway: {attack}", "gateway", outcome))
        # With the player key it signs only players' tokens: one not seated here sees no hand.
        outsider = sign(PLAYER_KEY.encode(), ROLE_PLAYER, "mallory", time.time())
        kind = await _command(gateway.nc, table_id, _view(table_id, 1), outsider)
        lines.append(
            report(
                nats_backend,
                "gateway: a stranger's token reads a seat",
                "gateway",
                REFUSED if kind == "PermissionDenied" else kind,
            )
        )
    assert all(line.endswith(REFUSED) for line in lines), "\n".join(lines)


NEEDED = {s: (*KEYS_OF[s], *map(public_key_env, PUBLIC_KEYS_OF[s])) for s in KEYS_OF}
"""Every token key each service needs: its declared ones and its accepted signers' public keys."""


@pytest.mark.parametrize(
    ("service", "missing"), [(s, var) for s, needed in NEEDED.items() for var in needed], ids=lambda v: str(v)
)
def test_every_service_exits_2_naming_a_missing_token_key(service: str, missing: str) -> None:
    keys = {**KEYS.env(service), GATEWAY_KEY_ENV: secrets.token_hex(32)}
    assert missing in keys
    env = _env(TRIX_NATS_URL="none", TRIX_GRPC_PORT="0", **{k: v for k, v in keys.items() if k != missing})
    done = subprocess.run(
        [sys.executable, "-m", f"trix.{service}"], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    outcome = REFUSED if done.returncode == 2 and missing in done.stderr else f"exit {done.returncode}"
    report(IN_PROCESS, f"start {service} without {missing}", "operator", outcome)
    assert done.returncode == 2, (done.returncode, done.stderr[-500:])
    assert missing in done.stderr


def test_an_invitation_and_an_internal_token_never_stand_for_each_other() -> None:
    """ADR 0018: a spectator invitation is signed with the player-role key, like the player
    tokens, in a format of its own: one is never accepted as the other, and an invitation is
    bound to its table and its expiry."""
    now = time.time()
    key = PLAYER_KEY.encode()
    invitation = sign_invitation(key, "tbl-1", "ann", now, 60)
    assert verify_invitation(key, invitation, "tbl-1", now) == "ann"
    token = sign(key, ROLE_PLAYER, "ann", now)
    refusals = {
        "an invitation as a caller token": lambda: verify(Keys(player=key), invitation, now),
        "a caller token as an invitation": lambda: verify_invitation(key, token, "tbl-1", now),
        "another table": lambda: verify_invitation(key, invitation, "tbl-2", now),
        "expired": lambda: verify_invitation(key, invitation, "tbl-1", now + 61),
        "another key": lambda: verify_invitation(secrets.token_bytes(32), invitation, "tbl-1", now),
        "another inviter": lambda: verify_invitation(key, invitation.replace(".ann.", ".ben."), "tbl-1", now),
    }
    for attack, check in refusals.items():
        with pytest.raises((PermissionDenied, Unauthenticated)):
            check()
        report(IN_PROCESS, f"invitation: {attack}", "player", REFUSED)


def test_a_remembered_token_lets_through_only_those_bytes_under_the_same_roles_until_it_expires() -> None:
    """`VerifiedTokens` (the table's per-command check, issue 16) refuses whatever `verify`
    refuses: it remembers a verified token, never a caller."""
    keys = Keys(player=secrets.token_bytes(32))
    tokens = VerifiedTokens(keys, max_tokens=2)
    now = time.time()
    good = sign(keys.player, ROLE_PLAYER, "ann", now, ttl_s=60)
    assert tokens.verify(good, now).name == "ann"
    assert tokens.verify(good, now + 30).name == "ann"  # remembered
    with pytest.raises(Unauthenticated, match="expired"):
        tokens.verify(good, now + 61)  # remembered, but past its own expiry
    with pytest.raises(Unauthenticated, match="not accepted"):
        tokens.verify(good, now, roles=(ROLE_SERVICE,))  # remembered, but not a role this call takes
    forged = good[:-1] + ("0" if good[-1] != "0" else "1")
    with pytest.raises(Unauthenticated, match="signature"):
        tokens.verify(forged, now)
    other = sign(secrets.token_bytes(32), ROLE_PLAYER, "ann", now, ttl_s=60)
    with pytest.raises(Unauthenticated, match="signature"):
        tokens.verify(other, now)  # same player and expiry, another key: other bytes
    for name in ("ben", "cat", "dan"):  # more tokens than it keeps: the oldest are forgotten...
        tokens.verify(sign(keys.player, ROLE_PLAYER, name, now, ttl_s=60), now)
    assert len(tokens._known) <= 2
    assert tokens.verify(good, now).name == "ann"  # ...and verified again when they come back


def test_a_service_token_verifies_only_under_the_key_of_the_service_it_names() -> None:
    """ADR 0028: the table holds the public keys of the table, the timers and the operators
    only; a token in one of their names signed with another's key, or in the name of a service
    it does not accept, is refused, and `VerifiedTokens` remembers only what verified. A
    signer re-signs only every half lifetime (the verifiers' cache sees one token meanwhile)."""
    table = KEYS.keys("table")
    tokens = VerifiedTokens(table)
    now = time.time()
    timers = KEYS.keys("timers").signer("timers", ttl_s=60)
    genuine = timers.token(now)
    assert tokens.verify(genuine, now).name == "timers"
    assert timers.token(now + 29) == genuine and timers.token(now + 30) != genuine
    refusals = {
        "the table's name, the timers' key": (sign_service(KEYS.signing_key("timers"), "table", now), "signature"),
        "the operators' name, matchmaking's key": (
            sign_service(KEYS.signing_key("matchmaking"), ADMIN, now),
            "signature",
        ),
        "matchmaking's own, not accepted here": (KEYS.token(ROLE_SERVICE, "matchmaking"), "not accepted"),
        "a signature cut short": (genuine[:-4], "signature"),
        "another name on the timers' signature": (genuine.replace(".timers.", ".admin."), "signature"),
    }
    for attack, (token, message) in refusals.items():
        with pytest.raises(Unauthenticated, match=message):
            tokens.verify(token, now)
        report(IN_PROCESS, f"service token: {attack}", "service", REFUSED)
    with pytest.raises(ConfigError, match=SERVICE_KEY_ENV):
        load_signing_key({SERVICE_KEY_ENV: "not-hex" * 8})

"""Issue 42, finding 1 and part of 6, on the real edge of `trix up` (Envoy in front of its
first gateway), over HTTP/JSON as any web client would call it:

- the per-address sign-in and new-account budgets (ADR 0018) hold when a client sends a forged
  X-Forwarded-For on every call (before, the edge took the client's address from it and each
  forged address got a fresh budget: 33/33 sign-ins and new accounts went through);
- an HTTP/JSON call with a query parameter its request has no field for gets 400 and a message
  naming the parameter (before: 503 "remote reset", the call passed on untranscoded).

Each test calls from its own loopback address (127.0.0.0/8 is all loopback), so the budgets it
spends are not those of the other tests' 127.0.0.1.
"""

from __future__ import annotations

import http.client
import json
import secrets
import time
from typing import Any

from security_support import ACCOUNTS_BURST, ACCOUNTS_PER_HOUR, REFUSED, Backend, report

PREFIX = "/trix.v1.GatewayService/"
TIMEOUT_S = 30.0
SIGNIN_BURST = 30
"""TRIX_GATEWAY_SIGNIN_BURST (trix up's default): sign-ins one address may make at once."""
SIGNIN_REFILL_PER_S = 30 / 60
"""TRIX_GATEWAY_SIGNINS_PER_MIN / 60."""
ACCOUNTS_REFILL_PER_S = ACCOUNTS_PER_HOUR / 3600
"""TRIX_GATEWAY_NEW_ACCOUNTS_PER_HOUR / 3600."""
TOO_MANY = 429
"""RESOURCE_EXHAUSTED as HTTP (the transcoder's convert_grpc_status)."""


def _call(
    edge: str, method: str, body: dict[str, Any], source: str, headers: dict[str, str] | None = None, query: str = ""
) -> tuple[int, str]:
    """One HTTP/JSON call to the edge from loopback address `source`: (HTTP status, body)."""
    host, port = edge.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT_S, source_address=(source, 0))
    try:
        conn.request(
            "POST",
            PREFIX + method + query,
            body=json.dumps(body).encode(),
            headers={"content-type": "application/json", **(headers or {})},
        )
        reply = conn.getresponse()
        return reply.status, reply.read().decode(errors="replace")
    finally:
        conn.close()


def _forged(i: int) -> dict[str, str]:
    """A different forged client address on every call: one hop, or a chain of proxies."""
    one = f"198.51.{i // 250}.{i % 250 + 1}"
    return {"x-forwarded-for": one if i % 2 else f"{one}, 203.0.113.{i % 250 + 1}"}


def _sign_in(edge: str, source: str, secret: str, i: int) -> tuple[int, str]:
    return _call(edge, "SignIn", {"device_secret": secret, "display_name": f"xff-{i}"}, source, _forged(i))


def test_sign_in_and_new_account_budgets_hold_with_a_forged_x_forwarded_for(up_platform: Backend) -> None:
    source = "127.0.0.42"
    started = time.monotonic()
    made: list[str] = []
    accounts: list[int] = []
    refusals: list[str] = []
    for i in range(ACCOUNTS_BURST + 5):  # new devices: a new account each
        secret = f"xff-device-{i}-{secrets.token_hex(12)}"
        status, body = _sign_in(up_platform.edge, source, secret, i)
        accounts.append(status)
        if status == 200:
            made.append(secret)
        else:
            refusals.append(body)
    refill = (time.monotonic() - started) * ACCOUNTS_REFILL_PER_S
    new_refused = accounts.count(TOO_MANY) > 0 and accounts.count(200) <= ACCOUNTS_BURST + refill
    report(
        up_platform,
        "new accounts past the budget, a forged X-Forwarded-For each (edge)",
        "anyone",
        REFUSED if new_refused else f"ALLOWED ({accounts.count(200)}/{len(accounts)} made)",
    )
    assert accounts[:ACCOUNTS_BURST] == [200] * ACCOUNTS_BURST, accounts
    assert new_refused, accounts
    assert set(accounts) == {200, TOO_MANY}, accounts
    assert all("too many new accounts" in r for r in refusals), refusals  # refused, saying why

    sign_ins: list[int] = []
    refusals.clear()
    for i in range(SIGNIN_BURST):  # existing accounts: only the sign-in budget applies
        status, body = _sign_in(up_platform.edge, source, made[i % len(made)], 1000 + i)
        sign_ins.append(status)
        if status != 200:
            refusals.append(body)
    refill = (time.monotonic() - started) * SIGNIN_REFILL_PER_S
    accepted = accounts.count(200) + sign_ins.count(200)
    held = sign_ins.count(TOO_MANY) > 0 and len(accounts) + sign_ins.count(200) <= SIGNIN_BURST + refill + 1
    report(
        up_platform,
        "sign-ins past the budget, a forged X-Forwarded-For each (edge)",
        "anyone",
        REFUSED if held else f"ALLOWED ({accepted} accepted)",
    )
    assert held, (accounts, sign_ins)
    assert set(sign_ins) == {200, TOO_MANY}, sign_ins
    assert all("too many sign-ins" in r for r in refusals), refusals


def test_an_unknown_query_parameter_is_a_400_naming_it(up_platform: Backend) -> None:
    source = "127.0.0.43"
    status, body = _call(up_platform.edge, "GetView", {}, source, query="?tabel_id=t1")
    outcome = REFUSED if status == 400 else f"answered {status} {body[:80]!r}"
    report(up_platform, "an HTTP/JSON call with an unknown query parameter (edge)", "anyone", outcome)
    assert status == 400, (status, body)
    assert '"tabel_id"' in body and "GetViewRequest" in body, body  # a message a client can show
    # A query parameter naming a field of the request is still read (the transcoder's mapping).
    secret = f"query-device-{secrets.token_hex(12)}"
    status, body = _call(up_platform.edge, "SignIn", {"device_secret": secret}, source, query="?display_name=quiz")
    assert status == 200, (status, body)
    assert json.loads(body)["player_id"]

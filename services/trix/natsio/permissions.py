"""NATS users and their permissions: one user per service, least privilege.

Owns `authorization_block`, the `authorization { users = [...] }` section of a
nats-server config with one user per service (ARCHITECTURE.md "Each service connects
to NATS as its own user with the least permissions it needs"). The table service
owns the private data (table logs, snapshots, server seeds: docs/rules.md §14); the
gateway is whitelisted to table command requests, presence, its own inbox and the
per-seat and public table event subjects (live and through JetStream on
TABLE_EVENTS), and the server refuses it everything else. The other backend
services may use everything except the table service's private streams and bucket;
of them only scoring may publish RecordArchived (`trix.scoring.archived.*`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from trix.natsio import subjects

SERVICE_USERS = ("table", "timers", "scoring", "matchmaking", "gateway")
GATEWAY_INBOX_PREFIX = "_INBOX_gateway"
"""The gateway connects with this `inbox_prefix` and may subscribe only under it, so it
never sees replies addressed to another service's inbox."""
GATEWAY_ACCOUNTS_BUCKET = "gateway_accounts"
"""The gateway's own KV bucket (guest accounts, issue 9): the only bucket it may read or write."""

PRIVATE_STREAMS = (subjects.TABLE_LOG_STREAM, subjects.TABLE_SNAPSHOTS_STREAM, "KV_table_secrets")
PRIVATE_SUBJECTS = (subjects.all_table_logs(), subjects.all_table_snapshots(), "$KV.table_secrets.>")


def _private_api_subjects() -> list[str]:
    """Every JetStream API subject naming a private stream ($JS.API.<A>.<B>.<stream>[.…])."""
    out: list[str] = []
    for stream in PRIVATE_STREAMS:
        out += [f"$JS.API.*.*.{stream}", f"$JS.API.*.*.{stream}.>", f"$JS.API.*.*.*.{stream}"]
        out += [f"$JS.API.*.*.*.{stream}.>", f"$JS.ACK.{stream}.>"]
    return out


def _gateway_accounts_subjects() -> list[str]:
    """The gateway's guest accounts bucket: provision it, read and write its keys."""
    stream = f"KV_{GATEWAY_ACCOUNTS_BUCKET}"
    return [
        f"$KV.{GATEWAY_ACCOUNTS_BUCKET}.>",
        f"$JS.API.STREAM.INFO.{stream}",
        f"$JS.API.STREAM.CREATE.{stream}",
        f"$JS.API.STREAM.UPDATE.{stream}",
        f"$JS.API.STREAM.MSG.GET.{stream}",
        f"$JS.API.DIRECT.GET.{stream}",
        f"$JS.API.DIRECT.GET.{stream}.>",
    ]


def gateway_permissions() -> dict[str, object]:
    """Whitelist of the gateway: everything not listed is refused by the server."""
    events = subjects.TABLE_EVENTS_STREAM
    return {
        "publish": {
            "allow": [
                subjects.all_table_commands(),
                subjects.all_presence(),
                "$JS.API.INFO",
                f"$JS.API.STREAM.INFO.{events}",
                f"$JS.API.CONSUMER.CREATE.{events}",
                f"$JS.API.CONSUMER.CREATE.{events}.>",
                f"$JS.API.CONSUMER.INFO.{events}.>",
                f"$JS.API.CONSUMER.DELETE.{events}.>",
                f"$JS.API.CONSUMER.MSG.NEXT.{events}.>",
                f"$JS.ACK.{events}.>",
                f"$JS.FC.{events}.>",
                *_gateway_accounts_subjects(),
            ]
        },
        "subscribe": {"allow": [subjects.all_seat_events(), subjects.all_public_events(), f"{GATEWAY_INBOX_PREFIX}.>"]},
    }


def backend_permissions(user: str = "scoring") -> dict[str, object]:
    """Timers, scoring, matchmaking: everything but the table service's private data.

    Only scoring may publish RecordArchived (it makes the table service purge a finished
    table's log, ADR 0003): timers and matchmaking are refused it."""
    private = [*PRIVATE_SUBJECTS, *_private_api_subjects()]
    if user != "scoring":
        private.append(subjects.all_records_archived())
    return {
        "publish": {"allow": [">"], "deny": private},
        "subscribe": {"allow": [">"], "deny": list(PRIVATE_SUBJECTS)},
    }


def permissions_of(user: str) -> dict[str, object]:
    if user == "gateway":
        return gateway_permissions()
    if user == "table":
        return {"publish": {"allow": [">"]}, "subscribe": {"allow": [">"]}}
    return backend_permissions(user)


def authorization_block(passwords: Mapping[str, str]) -> str:
    """The nats-server config section declaring one user per service in `passwords`.

    JSON is valid nats-server config syntax, so values are written with json.dumps.
    """
    users = []
    for user, password in passwords.items():
        if user not in SERVICE_USERS:
            raise ValueError(f"unknown service user {user!r}; one of {', '.join(SERVICE_USERS)}")
        users.append({"user": user, "password": password, "permissions": permissions_of(user)})
    return "authorization " + json.dumps({"users": users}, indent=2) + "\n"


def user_url(url: str, user: str, password: str) -> str:
    """`nats://127.0.0.1:4222` -> `nats://user:password@127.0.0.1:4222` (the form TRIX_NATS_URL takes)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "nats", url
    return f"{scheme}://{user}:{password}@{rest}"

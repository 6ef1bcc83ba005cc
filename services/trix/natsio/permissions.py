"""NATS users and their permissions: one user per service, least privilege (issue 18).

Owns the one generator of the platform's NATS users: `grants_of(user)` says what each
service does on NATS (the subjects it publishes and subscribes to, the streams and
buckets it reads or writes, its own durable consumers, the streams it opens ephemeral
consumers on), `permissions_of(user)` turns that into a nats-server whitelist, and
`authorization_block` writes the `authorization { users = [...] }` section that
`trix up`, the tests and `deploy/k8s` (a drift check) all use (docs/architecture.md: "Each
service connects to NATS as its own user with the least permissions it needs", ADR 0014).

Everything is a whitelist: what is not listed is refused by the server. The users and
their grants are the services' declarations (`trix.declarations.SERVICES`, whose names
come from `trix.natsio.names` and `trix.natsio.subjects`), so a new service, subject or
consumer is granted where it is declared, never as a hand-written string here. Each
function takes the declarations (default: the platform's), so a test may pass its own.

What it guarantees:
- No service user may create, update or delete a stream or bucket: only the
  `provisioner` user may (`python -m trix.natsio.provision`), and it may not read any
  message. So nobody can mirror or source the table's private data (TABLE_LOG,
  TABLE_SNAPSHOTS, KV_table_secrets: docs/rules.md §14) into a stream of its own.
- Only the table user reads the private streams (no direct get, message get or
  consumer on them for anyone else).
- Publish rights follow ownership: only the table publishes `trix.table.evt.>`, logs and
  snapshots; only scoring writes its journal and RecordArchived; only matchmaking
  announces matches; only the timers write their audit; only the gateway presence.
- Each service creates, reads from, acknowledges and deletes only its own durable
  consumers; a service that opens ephemeral consumers on a stream is refused the names
  of the other services' durables on it.
- Each user receives replies only under its own inbox prefix (`inbox_prefix(user)`), so
  no service sees the answers to another's requests (the table's reads of its secrets).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from urllib.parse import unquote, urlsplit

from trix.declarations import SERVICES, ServiceDeclaration, declaration, names_of
from trix.natsio import names, subjects
from trix.natsio.grants import Grants
from trix.natsio.names import kv_stream, kv_subjects

Services = Sequence[ServiceDeclaration]
PROVISIONER = "provisioner"
"""The one user that creates and updates streams and buckets (`trix.natsio.provision`)."""


def service_users(services: Services = SERVICES) -> tuple[str, ...]:
    """The services' NATS users: one per declared service, named after it."""
    return names_of(services)


def users(services: Services = SERVICES) -> tuple[str, ...]:
    """Every NATS user: the services' and the provisioner."""
    return (*service_users(services), PROVISIONER)


SERVICE_USERS = service_users()
USERS = users()


def inbox_prefix(user: str) -> str:
    """The reply inbox prefix of a user: it may subscribe to replies only under it."""
    return f"_INBOX_{subjects.token(user, 'user')}"


GATEWAY_INBOX_PREFIX = inbox_prefix("gateway")
"""The gateway connects with this `inbox_prefix` and may subscribe only under it, so it
never sees replies addressed to another service's inbox."""

PRIVATE_STREAMS = (names.TABLE_LOG_STREAM, names.TABLE_SNAPSHOTS_STREAM, kv_stream(names.TABLE_SECRETS_BUCKET))
"""The table service's private data (hands, seeds: docs/rules.md §14): only the table user reads it."""


def grants_of(user: str, services: Services = SERVICES) -> Grants:
    """What service `user` does on NATS."""
    try:
        return declaration(user, services).grants
    except ValueError:
        raise ValueError(f"unknown service user {user!r}; one of {', '.join(service_users(services))}") from None


def _durables_of_others(user: str, stream: str, services: Services) -> list[str]:
    return [name for other in services if other.name != user for s, name in other.grants.durable if s == stream]


def _consumer_api(stream: str, consumer: str) -> list[str]:
    """Create, info, delete, pull from and acknowledge one consumer of a stream."""
    api = "$JS.API.CONSUMER"
    return [
        f"{api}.CREATE.{stream}.{consumer}",
        f"{api}.CREATE.{stream}.{consumer}.>",
        f"{api}.DURABLE.CREATE.{stream}.{consumer}",
        f"{api}.INFO.{stream}.{consumer}",
        f"{api}.DELETE.{stream}.{consumer}",
        f"{api}.MSG.NEXT.{stream}.{consumer}",
        f"$JS.ACK.{stream}.{consumer}.>",
    ]


def permissions_of(user: str, services: Services = SERVICES) -> dict[str, object]:
    """The nats-server permissions of `user`: a whitelist, with denials only to carve the
    other services' durable consumers out of a stream it opens ephemeral consumers on."""
    if user == PROVISIONER:
        return provisioner_permissions()
    g = grants_of(user, services)
    allow: list[str] = ["$JS.API.INFO", *g.publish]
    deny: list[str] = []
    for stream in g.read:
        allow += [f"$JS.API.STREAM.INFO.{stream}", f"$JS.API.STREAM.MSG.GET.{stream}"]
        allow += [f"$JS.API.DIRECT.GET.{stream}", f"$JS.API.DIRECT.GET.{stream}.>"]
    allow += [kv_subjects(b) for b in g.write_buckets]
    allow += [f"$JS.API.STREAM.PURGE.{s}" for s in g.purge]
    for stream in g.ephemeral:
        allow += [f"$JS.API.STREAM.INFO.{stream}", f"$JS.API.CONSUMER.CREATE.{stream}", *_consumer_api(stream, "*")]
        allow.append(f"$JS.FC.{stream}.>")
        for name in _durables_of_others(user, stream, services):
            deny += _consumer_api(stream, name)
    for stream, name in g.durable:
        allow += [f"$JS.API.STREAM.INFO.{stream}", *_consumer_api(stream, name), f"$JS.FC.{stream}.>"]
    perms: dict[str, object] = {
        "publish": {"allow": list(dict.fromkeys(allow)), **({"deny": deny} if deny else {})},
        "subscribe": {"allow": [*g.subscribe, f"{inbox_prefix(user)}.>"]},
    }
    if g.serves_requests:
        perms["allow_responses"] = True
    return perms


def provisioner_permissions() -> dict[str, object]:
    """The provisioner creates, updates and deletes streams and buckets and reads their
    configs; it may not read a single message (no get, no consumer, no subscription)."""
    api = "$JS.API.STREAM"
    return {
        "publish": {
            "allow": ["$JS.API.INFO", f"{api}.INFO.*", f"{api}.CREATE.*", f"{api}.UPDATE.*", f"{api}.DELETE.*"]
        },
        "subscribe": {"allow": [f"{inbox_prefix(PROVISIONER)}.>"]},
    }


def streams_of(user: str, services: Services = SERVICES) -> tuple[str, ...]:
    """The streams (and buckets' streams) service `user` uses and may see."""
    return grants_of(user, services).streams


def authorization_block(passwords: Mapping[str, str], services: Services = SERVICES) -> str:
    """The nats-server config section declaring one user per entry of `passwords`.

    JSON is valid nats-server config syntax, so values are written with json.dumps.
    """
    known = users(services)
    entries = []
    for user, password in passwords.items():
        if user not in known:
            raise ValueError(f"unknown NATS user {user!r}; one of {', '.join(known)}")
        entries.append({"user": user, "password": password, "permissions": permissions_of(user, services)})
    return "authorization " + json.dumps({"users": entries}, indent=2) + "\n"


def user_url(url: str, user: str, password: str) -> str:
    """`nats://127.0.0.1:4222` -> `nats://user:password@127.0.0.1:4222` (the form TRIX_NATS_URL takes)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "nats", url
    return f"{scheme}://{user}:{password}@{rest}"


def user_of(url: str) -> str | None:
    """The user named in a NATS URL (`nats://table:pw@host:4222` -> `table`), None without one."""
    if "://" not in url:
        url = f"nats://{url}"
    name = urlsplit(url).username
    return unquote(name) if name else None

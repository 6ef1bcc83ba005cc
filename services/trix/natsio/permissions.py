"""NATS users and their permissions: one user per service, least privilege (ADR 0014).

Owns the one generator of the platform's NATS users: `grants_of(user)` (what a service
publishes, subscribes to, reads, writes and consumes), `permissions_of(user)` (that as a
nats-server whitelist) and `authorization_block` (the section `trix up`, the tests and
`deploy/k8s` use). Grants come from the declarations (`trix.declarations.SERVICES`), never
from strings here. Guarantees: only the `provisioner` creates or deletes streams and buckets
and reads no message; only the table reads its private streams (docs/rules.md §14); publish
rights follow ownership; each user touches only its own durables and its own inbox prefix.
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

"""`trix.natsio.publish.kv_write` and `kv_create` against a real nats-server: the platform's
compare-and-set of a key-value bucket (issue 42). A new key is created, an existing one is a
create lost (None) and keeps its value, a deleted or purged key is created again, an update
at a revision that is not the key's last is lost. (A leader's "in process", 10164, comes only
from a cluster: its answer, UNAVAILABLE, is proven in tests/foundation/test_runtime.py.)"""

from __future__ import annotations

from foundation_support import connected
from nats.js.api import KeyValueConfig

from support.nats import NatsServer
from trix.natsio.publish import kv_create, kv_write


async def test_a_key_is_created_once_and_a_deleted_key_created_again(nats_server: NatsServer) -> None:
    async with connected(nats_server.url, "test-kv-write") as conn:
        kv = await conn.jetstream.create_key_value(KeyValueConfig(bucket="kvwrite", history=2))
        first = await kv_write(kv, "acct", b"mine", 0)
        assert first is not None
        assert await kv_write(kv, "acct", b"theirs", 0) is None  # exists: a create lost
        assert await kv_create(kv, "acct", b"theirs") is None
        assert (await kv.get("acct")).value == b"mine"

        assert await kv_write(kv, "acct", b"late", first + 5) is None  # not its last revision
        second = await kv_write(kv, "acct", b"next", first)
        assert second is not None and second > first
        assert (await kv.get("acct")).value == b"next"

        await kv.delete("acct")
        again = await kv_write(kv, "acct", b"again", 0)
        assert again is not None and again > second
        assert (await kv.get("acct")).value == b"again"
        await kv.purge("acct")
        assert await kv_create(kv, "acct", b"after purge") is not None
        assert (await kv.get("acct")).value == b"after purge"

"""Issue 39's lobby and issue 42's privacy rule together: the list of tables being played
(the gateway's `live_tables` query, answered by scoring) never shows a private table, to anyone,
its own players included; a public table of the same players is listed. On `trix up`'s real
scoring through the Envoy edge and the gateway, the tables' results published as the table's
NATS user, as the table publishes them."""

from __future__ import annotations

import asyncio
import time

from security_support import REFUSED, Backend, connected, report
from test_private_games import _query, player_and_outsider
from test_scoring_settlement import _created, _event

from trix.client import GatewayClient
from trix.natsio import subjects
from trix.v1 import scoring_pb2


async def _live(client: GatewayClient) -> set[str]:
    reply = await _query(client, live_tables=scoring_pb2.ListLiveTablesRequest(page_size=100))
    return {t.table_id for t in reply.live_tables.tables}


async def test_a_running_private_table_is_never_listed_in_the_lobby(up_platform: Backend) -> None:
    run = str(int(time.time() * 1000))
    async with player_and_outsider(up_platform, "lobby") as (player, outsider):
        players = [player.player_id, f"la{run}", f"lb{run}", f"lc{run}"]
        private, public = f"lobbypriv{run}", f"lobbypub{run}"
        async with connected(up_platform, "table") as table:
            js = table.nc.jetstream(timeout=20)
            for table_id, hidden in ((private, True), (public, False)):  # the public one last
                created = _created(players)
                created.private_table = hidden
                await js.publish(subjects.table_results(table_id), _event(table_id, 1, table_created=created))
        deadline = time.monotonic() + 60
        while public not in await _live(outsider):  # scoring applies the results in order
            assert time.monotonic() < deadline, "the public table was never listed"
            await asyncio.sleep(0.2)
        lines = [
            report(
                up_platform,
                f"see a private table in the lobby's list ({who})",
                who,
                f"ALLOWED (listed {private})" if private in await _live(client) else REFUSED,
            )
            for who, client in (("outsider", outsider), ("player", player))
        ]
        assert all(line.endswith(REFUSED) for line in lines), "\n".join(lines)
        assert public in await _live(player)

"""Run as a script by test_play_restart (a process of its own: gRPC running in the test's
process would break pexpect's next pty fork): signs in as the player of a device file and asks
matchmaking to queue him until it refuses with something else than `already queued`, normally
`FAILED_PRECONDITION ... already seated at table T` once his ticket was matched (neither refusal
queues him). Prints that refusal, or why there was none.

    python until_seated.py TARGET DEVICE_FILE WAIT_S
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import grpc

from trix.client import GatewayClient, device_secret
from trix.v1 import common_pb2, gateway_pb2, matchmaking_pb2


async def until_seated(target: str, device: Path, wait_s: float) -> str:
    client = GatewayClient(target)
    try:
        await client.sign_in(device_secret(device), "probe")
        deadline = time.monotonic() + wait_s
        request = gateway_pb2.FindMatchRequest(wish=matchmaking_pb2.GameWish(variant=common_pb2.VARIANT_TRIX))
        while time.monotonic() < deadline:
            try:
                await client.stub.FindMatch(request, metadata=client.metadata, timeout=10)
            except grpc.aio.AioRpcError as err:
                if err.code() != grpc.StatusCode.ALREADY_EXISTS:
                    return f"{err.code().name}: {err.details()}"
            else:
                return "queued anew: the killed run's ticket was gone"
            await asyncio.sleep(0.5)
        return "the ticket was never matched"
    finally:
        await client.close()


if __name__ == "__main__":
    print(asyncio.run(until_seated(sys.argv[1], Path(sys.argv[2]), float(sys.argv[3]))))

"""The Envoy edge (trix.edge, started by the embedded platform like `trix up --edge`):
a whole game played over HTTP/JSON through Envoy's gRPC-JSON transcoding (sign in, find
a match with bots filling at once, follow the Events stream, act on each of its turns
until the game ends), statuses mapped to HTTP codes, and one gRPC-Web call. Plain
`http.client`, as a simple web client would."""

from __future__ import annotations

import http.client
import json
import random
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from gateway_support import Platform
from google.protobuf import descriptor_pb2

from trix.edge import descriptor_set
from trix.v1 import gateway_pb2

pytestmark = pytest.mark.timeout(240)

PREFIX = "/trix.v1.GatewayService/"
TIMEOUT_S = 60.0


class Http:
    """JSON calls to the edge, one connection per call (the stream keeps its own)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.token = ""

    def _open(self, method: str, body: bytes, content_type: str) -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT_S)
        headers = {"content-type": content_type}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        conn.request("POST", PREFIX + method, body=body, headers=headers)
        return conn.getresponse()

    def call(self, method: str, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        resp = self._open(method, json.dumps(request).encode(), "application/json")
        data = resp.read()
        resp.close()
        return resp.status, json.loads(data) if data else {}

    def ok(self, method: str, request: dict[str, Any]) -> dict[str, Any]:
        status, body = self.call(method, request)
        assert status == 200, (method, status, body)
        return body

    def stream(self, method: str, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """A server stream: one JSON object per line (print_options.stream_newline_delimited)."""
        resp = self._open(method, json.dumps(request).encode(), "application/json")
        assert resp.status == 200, (resp.status, resp.read()[:500])
        try:
            while line := resp.readline():
                if line.strip():
                    yield json.loads(line)
        finally:
            resp.close()


def _action(view: dict[str, Any], rng: random.Random) -> dict[str, Any] | None:
    decision = view["turn"]["decision"]
    if decision == "DECISION_CONTRACT" and view["legal_contracts"]:
        return {"choose_contract": rng.choice(view["legal_contracts"])}
    if decision == "DECISION_DOUBLE":
        return {"answer_double": {"cards": []}}
    if decision == "DECISION_CARD" and view["legal_cards"]:
        return {"play_card": rng.choice(view["legal_cards"])}
    return None


def test_whole_game_over_http_json_and_a_grpc_web_call(platform: Platform) -> None:
    assert platform.edge_url
    rng = random.Random(77)
    web = Http(platform.edge_url)
    secret = "http-json-device-secret-0123456789"

    # Statuses become HTTP codes; no token: 401 (UNAUTHENTICATED), nothing leaks.
    status, body = web.call("GetView", {"table_id": "t1"})
    assert status == 401 and body.get("code") == 16, (status, body)

    signed = web.ok("SignIn", {"device_secret": secret, "display_name": "web"})
    web.token, me = signed["token"], signed["player_id"]
    ticket = web.ok("FindMatch", {"wish": {"variant": "VARIANT_TRIX"}})["ticket"]
    assert ticket["ticket_id"]

    table_id, seat, acted, moves, last = "", -1, "", 0, 0
    ended: dict[str, Any] = {}
    for item in web.stream("Events", {"table_id": "", "after_sequence": "0"}):
        message = item["message"]
        if "ticket" in message and message["ticket"]["state"] == "TICKET_STATE_MATCHED":
            table_id, seat = message["ticket"]["table_id"], message["ticket"]["seat"]
        event = message.get("event")
        if event is None:
            continue
        sequence = int(event["sequence"])
        assert sequence == last + 1, (last, sequence)  # in order, no gap, no duplicate
        last = sequence
        if "game_ended" in event:
            ended = event["game_ended"]
            break
        turn = event.get("turn_started")
        if turn is None or seat not in turn["seats"] or turn["turn_seq"] == acted:
            continue
        view = web.ok("GetView", {"table_id": table_id})["view"]
        if view["turn"]["turn_seq"] != turn["turn_seq"] or view["finished"]:
            continue  # already answered by a timer; a newer turn follows on the stream
        action = _action(view, rng)
        if action is None:
            continue
        acted = turn["turn_seq"]
        action.update(table_id=table_id, action_id=f"web-{acted}", last_seen_sequence=str(sequence))
        status, reply = web.call("SubmitAction", {"action": action})
        assert status in (200, 409, 400), (status, reply)  # a lost race with a timer: ABORTED / FAILED_PRECONDITION
        moves += status == 200
    assert table_id and ended, "the game did not end"
    assert moves > 20
    assert json.loads(ended["record_json"])["fairness"]["server_seed"]
    standings = web.ok("Query", {"standings": {"table_id": table_id}})
    assert "standings" in standings

    # One gRPC-Web call: the same device secret signs in as the same player.
    assert _grpc_web_sign_in(platform.edge_url, secret) == me


def _grpc_web_sign_in(url: str, secret: str) -> str:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=TIMEOUT_S)
    message = gateway_pb2.SignInRequest(device_secret=secret, display_name="web").SerializeToString()
    headers = {"content-type": "application/grpc-web+proto", "x-grpc-web": "1", "accept": "application/grpc-web+proto"}
    conn.request("POST", PREFIX + "SignIn", body=b"\x00" + struct.pack(">I", len(message)) + message, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    assert resp.status == 200 and resp.getheader("content-type", "").startswith("application/grpc-web"), resp.status
    reply, trailers, at = None, "", 0
    while at < len(data):
        flag, size = data[at], struct.unpack(">I", data[at + 1 : at + 5])[0]
        frame = data[at + 5 : at + 5 + size]
        at += 5 + size
        if flag & 0x80:
            trailers += frame.decode()
        else:
            reply = gateway_pb2.SignInResponse.FromString(frame)
    assert "grpc-status:0" in trailers.replace(" ", ""), trailers
    assert reply is not None and reply.token
    return str(reply.player_id)


def _shape(fds: descriptor_pb2.FileDescriptorSet) -> dict[str, Any]:
    """Per file: its messages with their fields, its enums, its services with their methods."""
    return {
        f.name: (
            sorted((m.name, sorted((x.name, x.number, x.type, x.type_name) for x in m.field)) for m in f.message_type),
            sorted((e.name, sorted((v.name, v.number) for v in e.value)) for e in f.enum_type),
            sorted((s.name, sorted((x.name, x.input_type, x.output_type) for x in s.method)) for s in f.service),
        )
        for f in fds.file
        if f.name.startswith("trix/")
    }


def test_descriptor_set_matches_the_protos(tmp_path: Path) -> None:
    """The transcoder's descriptor set (built from the compiled trix.v1 modules) equals
    what protoc makes of proto/ (the drift check of the edge's API)."""
    import grpc_tools
    from grpc_tools import protoc

    root = Path(__file__).resolve().parents[2] / "proto"
    out = tmp_path / "trix.pb"
    protos = sorted(str(p.relative_to(root)) for p in (root / "trix" / "v1").glob("*.proto"))
    well_known = Path(grpc_tools.__file__).parent / "_proto"
    args = ["protoc", f"-I{root}", f"-I{well_known}", "--include_imports", f"--descriptor_set_out={out}", *protos]
    assert protoc.main(args) == 0
    from_protoc = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    ours = descriptor_set()
    shape = _shape(ours)
    assert "trix/v1/gateway.proto" in shape
    assert shape == {k: v for k, v in _shape(from_protoc).items() if k in shape}
    names = {f.name for f in ours.file}
    for f in ours.file:
        assert all(dep in names for dep in f.dependency), f.name

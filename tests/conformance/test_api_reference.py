"""The gateway API reference (issue 40): docs/api.md is what proto/apidoc.py generates from the
proto comments, the session protocol and the status tables, so `make api-doc-check` (in
`make test`) fails when a proto comment changes without it, and an RPC without its status
table cannot be documented at all."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


def load_apidoc() -> ModuleType:
    spec = importlib.util.spec_from_file_location("apidoc", REPO / "proto" / "apidoc.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


apidoc = load_apidoc()


@pytest.fixture
def proto_copy(tmp_path: Path) -> Path:
    root = tmp_path / "proto"
    shutil.copytree(REPO / "proto", root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_the_committed_reference_is_what_the_protos_generate() -> None:
    assert apidoc.generate() == (REPO / "docs" / "api.md").read_text(encoding="utf-8")


def test_a_changed_proto_comment_changes_the_reference(proto_copy: Path) -> None:
    gateway = proto_copy / "trix" / "v1" / "gateway.proto"
    text = gateway.read_text(encoding="utf-8")
    old = "  // Idempotency key chosen by the client.\n  string action_id = 2;"
    assert old in text
    gateway.write_text(
        text.replace(old, "  // A key the drift check must see.\n  string action_id = 2;"), encoding="utf-8"
    )
    generated = apidoc.generate(proto_copy)
    assert generated != (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    assert "| `action_id` | 2 | string | A key the drift check must see. |" in generated


def test_every_rpc_has_a_status_table_for_every_code_it_documents(proto_copy: Path) -> None:
    statuses_path = proto_copy / "trix" / "v1" / "gateway_status.json"
    statuses = json.loads(statuses_path.read_text(encoding="utf-8"))
    for rpc, table in statuses["rpcs"].items():
        assert set(table) <= set(apidoc.CODES), rpc
    del statuses["rpcs"]["GetView"]
    statuses_path.write_text(json.dumps(statuses), encoding="utf-8")
    with pytest.raises(apidoc.ApiDocError, match="GetView"):
        apidoc.generate(proto_copy)


def test_the_reference_has_the_session_protocol_and_a_status_table_per_rpc() -> None:
    text = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    for step in ("SignIn(", "Session() opened", "resume", "ticket MATCHED", "TurnStarted", "RESOURCE_EXHAUSTED"):
        assert step in text, step
    rpcs = [
        line.removeprefix("  rpc ").split("(")[0]
        for line in (REPO / "proto/trix/v1/gateway.proto").read_text().splitlines()
        if line.startswith("  rpc ")
    ]
    statuses = json.loads((REPO / "proto/trix/v1/gateway_status.json").read_text(encoding="utf-8"))
    assert rpcs and set(rpcs) == set(statuses["rpcs"])
    for rpc in rpcs:
        section = text.split(f"\n### {rpc}\n", 1)[1].split("\n### ", 1)[0]
        assert "| Status | When | What the client does |" in section, rpc

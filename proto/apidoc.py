"""Generate docs/api.md, the gateway API reference (issue 40): the one command behind `make api-doc`.

Owns the reference's generation only. Reads proto/trix/v1/*.proto with their comments (a
FileDescriptorSet with source info from grpc_tools.protoc, the compiler `make proto` uses),
the session protocol proto/trix/v1/gateway_protocol.md and the status codes per RPC
proto/trix/v1/gateway_status.json, and writes one Markdown page: the protocol, then every RPC
of trix.v1.GatewayService with its comment and its status-code table, then every message and
enum a client meets (those reachable from the RPCs), field by field. `make api-doc-check` (in
`make test`) generates it again and fails when docs/api.md differs: a proto comment changed
without the reference. The page is never edited by hand.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PACKAGE_DIR = PROTO_ROOT / "trix" / "v1"
PROTOCOL = PACKAGE_DIR / "gateway_protocol.md"
STATUSES = PACKAGE_DIR / "gateway_status.json"
OUT = ROOT / "docs" / "api.md"
SERVICE = "trix.v1.GatewayService"

# descriptor.proto field numbers, the path elements of SourceCodeInfo.Location.
FILE_MESSAGE, FILE_ENUM, FILE_SERVICE, FILE_SYNTAX = 4, 5, 6, 12
MESSAGE_FIELD, MESSAGE_NESTED, MESSAGE_ENUM, MESSAGE_ONEOF = 2, 3, 4, 8
ENUM_VALUE, SERVICE_METHOD = 2, 2
# The status codes in their numeric order (google.rpc.Code).
CODES = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
]
SCALARS = {
    descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE: "double",
    descriptor_pb2.FieldDescriptorProto.TYPE_FLOAT: "float",
    descriptor_pb2.FieldDescriptorProto.TYPE_INT64: "int64",
    descriptor_pb2.FieldDescriptorProto.TYPE_UINT64: "uint64",
    descriptor_pb2.FieldDescriptorProto.TYPE_INT32: "int32",
    descriptor_pb2.FieldDescriptorProto.TYPE_FIXED64: "fixed64",
    descriptor_pb2.FieldDescriptorProto.TYPE_FIXED32: "fixed32",
    descriptor_pb2.FieldDescriptorProto.TYPE_BOOL: "bool",
    descriptor_pb2.FieldDescriptorProto.TYPE_STRING: "string",
    descriptor_pb2.FieldDescriptorProto.TYPE_BYTES: "bytes",
    descriptor_pb2.FieldDescriptorProto.TYPE_UINT32: "uint32",
    descriptor_pb2.FieldDescriptorProto.TYPE_SFIXED32: "sfixed32",
    descriptor_pb2.FieldDescriptorProto.TYPE_SFIXED64: "sfixed64",
    descriptor_pb2.FieldDescriptorProto.TYPE_SINT32: "sint32",
    descriptor_pb2.FieldDescriptorProto.TYPE_SINT64: "sint64",
}


class ApiDocError(Exception):
    """The inputs cannot make a complete reference (an RPC without its status table...)."""


def descriptor_set(proto_root: Path) -> descriptor_pb2.FileDescriptorSet:
    """Every trix/v1 proto under `proto_root` and its imports, with comments (source info)."""
    import grpc_tools
    from grpc_tools import protoc

    package_dir = proto_root / PACKAGE_DIR.relative_to(PROTO_ROOT)
    protos = sorted(str(p.relative_to(proto_root)) for p in package_dir.glob("*.proto"))
    well_known = str(Path(grpc_tools.__file__).resolve().parent / "_proto")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "api.binpb")
        args = ["protoc", f"-I{proto_root}", f"-I{well_known}", "--include_source_info", "--include_imports"]
        if protoc.main([*args, f"--descriptor_set_out={out}", *protos]) != 0:
            raise ApiDocError("protoc failed on proto/trix/v1")
        return descriptor_pb2.FileDescriptorSet.FromString(Path(out).read_bytes())


class Comments:
    """The comments of one file, by element path."""

    def __init__(self, file: descriptor_pb2.FileDescriptorProto) -> None:
        self.by_path: dict[tuple[int, ...], descriptor_pb2.SourceCodeInfo.Location] = {
            tuple(loc.path): loc for loc in file.source_code_info.location
        }

    def text(self, path: tuple[int, ...]) -> str:
        loc = self.by_path.get(path)
        if loc is None:
            return ""
        lines = [line[1:] if line.startswith(" ") else line for line in loc.leading_comments.rstrip("\n").split("\n")]
        return "\n".join(lines).strip()

    def header(self) -> str:
        """The file's opening comment (before `syntax`)."""
        loc = self.by_path.get((FILE_SYNTAX,))
        if loc is None:
            return ""
        text = (loc.leading_comments or "".join(loc.leading_detached_comments)).rstrip("\n")
        return "\n".join(line[1:] if line.startswith(" ") else line for line in text.split("\n")).strip()


def one_line(text: str) -> str:
    """A comment fit for a table cell: one line, `|` escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def anchor(full_name: str) -> str:
    return full_name.lower().replace(".", "")


def heading(name: str, kind: str, file: str, comment: str) -> list[str]:
    """A message's or enum's title, its anchor, where it is declared and its comment."""
    short = name.lstrip(".")
    return [
        f"### {short.removeprefix('trix.v1.')}",
        "",
        f'<a id="{anchor(short)}"></a>*{kind}, {file}*',
        "",
        comment,
        "",
    ]


class Reference:
    def __init__(self, files: descriptor_pb2.FileDescriptorSet, statuses: dict[str, Any], protocol: str) -> None:
        self.statuses = statuses
        self.protocol = protocol
        self.messages: dict[str, tuple[descriptor_pb2.DescriptorProto, Comments, tuple[int, ...], str]] = {}
        self.enums: dict[str, tuple[descriptor_pb2.EnumDescriptorProto, Comments, tuple[int, ...], str]] = {}
        self.service: tuple[descriptor_pb2.ServiceDescriptorProto, Comments, tuple[int, ...]] | None = None
        self.gateway_file: Comments | None = None
        for file in files.file:
            comments = Comments(file)
            prefix = f".{file.package}" if file.package else ""
            for i, message in enumerate(file.message_type):
                self._index_message(message, comments, (FILE_MESSAGE, i), prefix, file.name)
            for i, enum in enumerate(file.enum_type):
                self.enums[f"{prefix}.{enum.name}"] = (enum, comments, (FILE_ENUM, i), file.name)
            for i, service in enumerate(file.service):
                if f"{file.package}.{service.name}" == SERVICE:
                    self.service = (service, comments, (FILE_SERVICE, i))
                    self.gateway_file = comments
        if self.service is None:
            raise ApiDocError(f"no service {SERVICE}")

    def _index_message(
        self, message: descriptor_pb2.DescriptorProto, comments: Comments, path: tuple[int, ...], prefix: str, file: str
    ) -> None:
        name = f"{prefix}.{message.name}"
        self.messages[name] = (message, comments, path, file)
        for i, nested in enumerate(message.nested_type):
            self._index_message(nested, comments, (*path, MESSAGE_NESTED, i), name, file)
        for i, enum in enumerate(message.enum_type):
            self.enums[f"{name}.{enum.name}"] = (enum, comments, (*path, MESSAGE_ENUM, i), file)

    # -- which types a client meets ------------------------------------------------------------

    def reachable(self) -> list[str]:
        """Message and enum names reachable from the RPCs, in the order first met."""
        assert self.service is not None
        order: list[str] = []
        todo = [t for m in self.service[0].method for t in (m.input_type, m.output_type)]
        while todo:
            name = todo.pop(0)
            if name in order or name.startswith(".google."):
                continue
            order.append(name)
            if name in self.messages:
                message = self.messages[name][0]
                if message.options.map_entry:
                    order.remove(name)
                todo.extend(f.type_name for f in message.field if f.type_name)
        return order

    def type_of(self, field: descriptor_pb2.FieldDescriptorProto) -> str:
        if field.type_name:
            entry = self.messages.get(field.type_name)
            if entry is not None and entry[0].options.map_entry:
                key, value = entry[0].field
                return f"map<{self.type_of(key)}, {self.type_of(value)}>"
            short = field.type_name.lstrip(".")
            kind = short if short.startswith("google.") else f"[{short.removeprefix('trix.v1.')}](#{anchor(short)})"
        else:
            kind = SCALARS[field.type]
        if field.label == descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED:
            return f"repeated {kind}"
        if field.proto3_optional:
            return f"optional {kind}"
        return kind

    # -- rendering ---------------------------------------------------------------------------

    def render(self) -> str:
        assert self.service is not None and self.gateway_file is not None
        service, comments, path = self.service
        out = [
            "# The gateway API",
            "",
            "<!-- Generated by proto/apidoc.py from proto/trix/v1/*.proto (their comments),",
            "     proto/trix/v1/gateway_protocol.md and proto/trix/v1/gateway_status.json.",
            "     Do not edit: change those and run `make api-doc`; `make api-doc-check` (in make test) fails",
            "     when this page is not what they generate. -->",
            "",
            self.gateway_file.header(),
            "",
            "Contents: [Session protocol](#session-protocol) · [RPCs](#rpcs) · "
            "[Messages and enums](#messages-and-enums)",
            "",
            self.protocol.strip(),
            "",
            "## RPCs",
            "",
            f"`{SERVICE}`: {one_line(comments.text(path))}",
            "",
            self.statuses["about"],
            "",
        ]
        rpcs = {m.name for m in service.method}
        missing = sorted(rpcs - set(self.statuses["rpcs"]))
        unknown = sorted(set(self.statuses["rpcs"]) - rpcs)
        if missing or unknown:
            raise ApiDocError(f"gateway_status.json: RPCs without a status table {missing}, unknown RPCs {unknown}")
        for i, method in enumerate(service.method):
            out += self._method(method, comments.text((*path, SERVICE_METHOD, i)))
        out += ["## Messages and enums", ""]
        for name in self.reachable():
            if name in self.messages:
                out += self._message(name)
            elif name in self.enums:
                out += self._enum(name)
        return "\n".join(out).rstrip("\n") + "\n"

    def _method(self, method: descriptor_pb2.MethodDescriptorProto, comment: str) -> list[str]:
        def kind(name: str, streaming: bool) -> str:
            short = name.lstrip(".").removeprefix("trix.v1.")
            return f"{'stream ' if streaming else ''}[{short}](#{anchor(name.lstrip('.'))})"

        out = [
            f"### {method.name}",
            "",
            f"`rpc {method.name}` ({kind(method.input_type, method.client_streaming)}) returns "
            f"({kind(method.output_type, method.server_streaming)})",
            "",
            comment,
            "",
            "| Status | When | What the client does |",
            "| --- | --- | --- |",
        ]
        table: dict[str, dict[str, Any]] = {}
        for code, entry in self.statuses["common"].items():
            if method.name not in entry.get("except", []):
                table[code] = entry
        table.update(self.statuses["rpcs"][method.name])
        for code in sorted(table, key=CODES.index):
            out.append(f"| `{code}` | {one_line(table[code]['when'])} | {one_line(table[code]['then'])} |")
        return [*out, ""]

    def _message(self, name: str) -> list[str]:
        message, comments, path, file = self.messages[name]
        out = heading(name, "message", file, comments.text(path))
        if not message.field:
            return [*out, "No fields.", ""]
        out += ["| Field | Number | Type | Description |", "| --- | --- | --- | --- |"]
        for i, field in enumerate(message.field):
            text = one_line(comments.text((*path, MESSAGE_FIELD, i)))
            if field.HasField("oneof_index") and not field.proto3_optional:
                text = f"*oneof `{message.oneof_decl[field.oneof_index].name}`.* {text}"
            out.append(f"| `{field.name}` | {field.number} | {self.type_of(field)} | {text} |")
        return [*out, ""]

    def _enum(self, name: str) -> list[str]:
        enum, comments, path, file = self.enums[name]
        out = [
            *heading(name, "enum", file, comments.text(path)),
            "| Value | Number | Description |",
            "| --- | --- | --- |",
        ]
        for i, value in enumerate(enum.value):
            out.append(f"| `{value.name}` | {value.number} | {one_line(comments.text((*path, ENUM_VALUE, i)))} |")
        return [*out, ""]


def generate(proto_root: Path = PROTO_ROOT) -> str:
    """docs/api.md's text from the protos, the protocol and the status tables under `proto_root`."""
    package_dir = proto_root / PACKAGE_DIR.relative_to(PROTO_ROOT)
    statuses = json.loads((package_dir / STATUSES.name).read_text(encoding="utf-8"))
    protocol = (package_dir / PROTOCOL.name).read_text(encoding="utf-8")
    return Reference(descriptor_set(proto_root), statuses, protocol).render()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="fail if docs/api.md differs from a fresh generation")
    args = parser.parse_args(argv)
    try:
        text = generate()
    except ApiDocError as err:
        print(f"apidoc: {err}", file=sys.stderr)
        return 2
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            diff = difflib.unified_diff(
                current.splitlines(), text.splitlines(), "docs/api.md", "generated", lineterm=""
            )
            print("\n".join(list(diff)[:60]), file=sys.stderr)
            print("api-doc-check: docs/api.md is not what the protos generate: run `make api-doc`", file=sys.stderr)
            return 1
        print("api-doc-check: docs/api.md is up to date")
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"apidoc: wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Generate the Python code of the protos: the one command behind `make proto`.

Owns code generation only: runs grpc_tools.protoc with the mypy-protobuf plugins
over proto/trix/v1/*.proto and writes `trix/v1/*_pb2.py`, `*_pb2.pyi`,
`*_pb2_grpc.py`, `*_pb2_grpc.pyi` under the output root (default `services`, so the
package is `trix.v1`). `make proto-check` runs it into a temporary directory and
diffs the result against the committed files. Generated files are never edited by hand.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PACKAGE_DIR = Path("trix") / "v1"
INIT_TEXT = '"""Generated protobuf and gRPC code for package trix.v1 (see proto/generate.py)."""\n'


def generate(out_root: Path) -> int:
    import grpc_tools
    from grpc_tools import protoc

    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / PACKAGE_DIR).glob("*.proto"))
    target = out_root / PACKAGE_DIR
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*_pb2*.py*"):
        old.unlink()
    bin_dir = Path(sys.executable).parent
    plugin = shutil.which("protoc-gen-mypy", path=str(bin_dir)) or shutil.which("protoc-gen-mypy")
    plugin_grpc = shutil.which("protoc-gen-mypy_grpc", path=str(bin_dir)) or shutil.which("protoc-gen-mypy_grpc")
    if plugin is None or plugin_grpc is None:
        print("protoc-gen-mypy not found: install the dev extras (pip install -e '.[dev]')", file=sys.stderr)
        return 1
    well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{well_known}",
        f"--plugin=protoc-gen-mypy={plugin}",
        f"--plugin=protoc-gen-mypy_grpc={plugin_grpc}",
        f"--python_out={out_root}",
        f"--grpc_python_out={out_root}",
        f"--mypy_out=quiet:{out_root}",
        f"--mypy_grpc_out=quiet:{out_root}",
        *protos,
    ]
    code = int(protoc.main(args))
    if code != 0:
        return code
    (target / "__init__.py").write_text(INIT_TEXT)
    (target / "py.typed").write_text("")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "services", help="output root (default: services)")
    args = parser.parse_args(argv)
    return generate(args.out)


if __name__ == "__main__":
    sys.exit(main())

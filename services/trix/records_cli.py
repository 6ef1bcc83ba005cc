"""`trix replay FILE` and `trix verify FILE`: the record tools of docs/rules.md §11/§12.

Owns: the command-line surface only (arguments, output, exit codes); the work is
in `trix.records`. The rules engine `trix.engine` is imported lazily inside the
run functions (no silent fallback to Python if it is missing: docs/architecture.md, "Style").

Exit codes:
  replay  0 the record is legal and its outputs match (completed record on stdout)
          1 legal, but recorded scores/totals/ranking differ (completed record on
            stdout, one line per difference on stderr)
          2 illegal or malformed record: exactly one line on stderr, never a traceback
  verify  0 the whole record checks out (commitment, hands, number of deals, play
            replayed under the rules, deal scores, totals, ranking: trix.verification),
          1 otherwise (the failing checks named on the last line), 2 malformed
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable
from typing import Any

from trix.records import (
    GameFactory,
    RecordError,
    read_record_file,
    replay,
)
from trix.verification import verify_record

EXIT_OK = 0
EXIT_DIFFERENCES = 1
EXIT_BAD_RECORD = 2


def _load_engine() -> tuple[GameFactory, Callable[..., Any]]:
    """The C rules engine (docs/engine-api.md)."""
    engine = importlib.import_module("trix.engine")
    return engine.Game, engine.Options


def _fail(message: str) -> int:
    # Exactly one line on stderr, whatever went wrong (docs/rules.md §12: never crash).
    print(" ".join(message.split()), file=sys.stderr)
    return EXIT_BAD_RECORD


def add_replay_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a game record (docs/rules.md §12), '-' for stdin")


def _read(path: str) -> Any:
    if path == "-":
        from trix.records import MAX_RECORD_BYTES, load_record

        return load_record(sys.stdin.buffer.read(MAX_RECORD_BYTES + 1))
    return read_record_file(path)


def run_replay(args: argparse.Namespace) -> int:
    try:
        record = _read(args.file)
        game_cls, options_cls = _load_engine()
        result = replay(record, game_cls, options_cls)
        output = json.dumps(result.record, ensure_ascii=False, indent=1)
    except RecordError as exc:
        return _fail(exc.message)
    except Exception as exc:  # noqa: BLE001 - an engine or tool bug: one line, no traceback
        return _fail(f"internal error ({type(exc).__name__}): {exc}")
    print(output)
    for line in result.differences:
        print(line, file=sys.stderr)
    return EXIT_DIFFERENCES if result.differences else EXIT_OK


def add_verify_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a game record (docs/rules.md §12) with its server_seed revealed")


def run_verify(args: argparse.Namespace) -> int:
    try:
        record = _read(args.file)
        game_cls, options_cls = _load_engine()
        report = verify_record(record, game_cls, options_cls)
    except RecordError as exc:
        return _fail(exc.message)
    except Exception as exc:  # noqa: BLE001 - never a traceback, whatever the input
        return _fail(f"internal error ({type(exc).__name__}): {exc}")
    for line in report.lines:
        print(line)
    return EXIT_OK if report.ok else EXIT_DIFFERENCES

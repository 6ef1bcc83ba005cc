"""`trix verify-competition FILE`: the command-line surface of `trix.competitions.verify`.

Owns: arguments, output and exit codes only. The rules engine `trix.engine` is imported lazily
(no silent fallback, as `trix verify`). Exit codes: 0 every check passed; 1 a check failed (the
failing checks named on the last line); 2 the file cannot be read as a competition file (one
line on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from trix.competitions.options import CompetitionError
from trix.competitions.verify import verify_competition
from trix.records_cli import EXIT_DIFFERENCES, EXIT_OK, _fail, _load_engine

MAX_FILE_BYTES = 64 * 1024 * 1024
"""A 256-entrant knockout's 85 records are a few MB; anything far larger is refused unread."""


def add_verify_competition_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a competition file (trix-competition/1), '-' for stdin")


def run_verify_competition(args: argparse.Namespace) -> int:
    try:
        if args.file == "-":
            raw = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
        else:
            with Path(args.file).open("rb") as f:
                raw = f.read(MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES:
            return _fail(f"the file is larger than {MAX_FILE_BYTES} bytes")
        document = json.loads(raw.decode("utf-8"))
        game_cls, options_cls = _load_engine()
        report = verify_competition(document, game_cls, options_cls)
    except CompetitionError as exc:
        return _fail(exc.message)
    except OSError as exc:
        return _fail(f"cannot read {args.file}: {exc.strerror}")
    except (UnicodeDecodeError, json.JSONDecodeError):
        return _fail("not JSON: a competition file is one JSON object")
    except Exception as exc:  # noqa: BLE001 - never a traceback, whatever the input
        return _fail(f"internal error ({type(exc).__name__}): {exc}")
    for line in report.lines:
        print(line)
    return EXIT_OK if report.ok else EXIT_DIFFERENCES

"""The `trix` console script: one dispatcher, each subcommand lives in its own module.

Subcommand modules are imported lazily so `trix replay` never pays for grpc/nats.
Each module exposes `add_<name>_arguments(parser)` and `run_<name>(args) -> int` (a `-` in
the name is `_` in the functions': `verify-competition` -> `run_verify_competition`).
"""

from __future__ import annotations

import argparse
import importlib
import sys

# name -> (module, help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "replay": ("trix.records_cli", "check a game record (docs/rules.md §12) and print it completed"),
    "verify": ("trix.records_cli", "verify a record's fair shuffle (docs/rules.md §11)"),
    "verify-competition": (
        "trix.competitions.verify_cli",
        "verify a competition file: its digest and every table's record (issue 43)",
    ),
    "selfplay": ("trix.selfplay", "play whole games with the built-in bots"),
    "bench": ("trix.bench", "benchmarks: `trix bench engine`, `trix bench bot`"),
    "up": ("trix.up", "start NATS and every service on loopback"),
    "play": ("trix.play", "play a game in the terminal through the gateway (embedded platform without --server)"),
    "demo": ("trix.demo", "one whole game of four bot clients through the gateway, then replay and verify it"),
    "loadtest": ("trix.loadtest.runner", "bot swarm through the gateway: steady, peak, churn, failover (issue 10)"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="trix", description="Trix (تركس) platform tools")
    sub = parser.add_subparsers(dest="command", required=True)
    chosen = argv[0] if argv else None
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text)
        if name != chosen:
            continue  # import only the module of the command being run
        module = importlib.import_module(module_name)
        function = name.replace("-", "_")
        getattr(module, f"add_{function}_arguments")(p)
        p.set_defaults(_run=getattr(module, f"run_{function}"))
    args = parser.parse_args(argv)
    result: int = args._run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())

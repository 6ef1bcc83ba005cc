"""The browser client's static files, served behind the edge by `trix up` (ADR 0016).

Owns one small loopback HTTP server for the built app (web/dist), so the app and the
gRPC-Web API share one origin. Paths never leave the root; an unknown path without an
extension gets index.html; hashed assets are cached for a year, index.html never; an unbuilt
app answers 503 naming the build command. A file the build pre-compressed (FILE.br, FILE.gz:
web/scripts/compress.mjs, brotli 11 and gzip 9) is sent in that form, with Content-Encoding,
to a client whose Accept-Encoding takes it (brotli first), else as it is; either way with
`Vary: Accept-Encoding`; those forms are never served as files of their own. The edge's
compressor passes an encoded response through untouched. `python -m trix.webapp --root DIR --port P`.
"""

from __future__ import annotations

import argparse
import mimetypes
import signal
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType

import trix

NOT_BUILT = (
    b"<!doctype html><meta charset=utf-8><title>Trix</title>"
    b"<p>The web app is not built: run <code>make web</code> (or <code>make play</code>) and reload.</p>"
)
HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": (
        # 'wasm-unsafe-eval': the Verify page compiles the rules engine (WebAssembly, ADR 0025)
        "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; media-src 'self' data:; base-uri 'none'; frame-ancestors 'none'"
    ),
}


ENCODINGS = (("br", ".br"), ("gzip", ".gz"))
"""The pre-compressed forms a file may have beside it, in the order they are preferred."""


def accepted(header: str | None) -> set[str]:
    """The content codings an Accept-Encoding header takes (q=0 refuses one; `*` takes all)."""
    taken: set[str] = set()
    refused: set[str] = set()
    for item in (header or "").split(","):
        name, _, params = item.strip().partition(";")
        coding = name.strip().lower()
        if not coding:
            continue
        q = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        (taken if q > 0 else refused).add(coding)
    if "*" in taken:
        taken |= {coding for coding, _ in ENCODINGS} - refused
    return taken


def encoded(found: Path, accept_encoding: str | None) -> tuple[Path, str | None, bool]:
    """The form of `found` to send: (its file, its Content-Encoding or None, whether any form exists)."""
    forms = [(coding, found.with_name(found.name + ext)) for coding, ext in ENCODINGS]
    forms = [(coding, path) for coding, path in forms if path.is_file()]
    taken = accepted(accept_encoding)
    for coding, path in forms:
        if coding in taken:
            return path, coding, True
    return found, None, bool(forms)


def default_root() -> Path:
    """web/dist of the checkout this package runs from."""
    return Path(trix.__file__).resolve().parents[2] / "web" / "dist"


def resolve(root: Path, url_path: str) -> Path | None:
    """The file for `url_path` inside `root`, index.html for app routes; None for nothing."""
    path = url_path.split("?", 1)[0].split("#", 1)[0]
    parts = [p for p in path.split("/") if p]
    if any(p in (".", "..") or "\\" in p or "\x00" in p for p in parts):
        return None
    candidate = root.joinpath(*parts) if parts else root / "index.html"
    try:
        candidate = candidate.resolve()
        candidate.relative_to(root.resolve())
    except (OSError, ValueError):
        return None
    if candidate.is_file():
        return candidate
    if not parts or "." not in parts[-1]:
        index = root / "index.html"
        return index if index.is_file() else None
    return None


class Handler(BaseHTTPRequestHandler):
    server_version = "trix-web"
    sys_version = ""
    root: Path = Path()

    def log_message(self, format: str, *args: object) -> None:
        pass  # no access log: the edge keeps its own

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str,
        cache: str,
        head: bool,
        coding: str | None = None,
        varies: bool = False,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if coding is not None:
            self.send_header("Content-Encoding", coding)
        if varies:
            self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", cache)
        for key, value in HEADERS.items():
            self.send_header(key, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _serve(self, head: bool) -> None:
        if not (self.root / "index.html").is_file():
            self._send(HTTPStatus.SERVICE_UNAVAILABLE, NOT_BUILT, "text/html; charset=utf-8", "no-store", head)
            return
        found = resolve(self.root, self.path)
        if found is None or found.name.endswith(tuple(ext for _, ext in ENCODINGS)):
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8", "no-store", head)
            return
        kind = mimetypes.guess_type(found.name)[0] or "application/octet-stream"
        if kind.startswith("text/") or kind in (
            "application/javascript",
            "application/json",
            "application/manifest+json",
        ):
            kind += "; charset=utf-8"
        immutable = found.parent.name == "assets"
        cache = "public, max-age=31536000, immutable" if immutable else "no-cache"
        body, coding, varies = encoded(found, self.headers.get("Accept-Encoding"))
        self._send(HTTPStatus.OK, body.read_bytes(), kind, cache, head, coding, varies)

    def do_GET(self) -> None:
        self._serve(head=False)

    def do_HEAD(self) -> None:
        self._serve(head=True)


def serve(root: Path, host: str, port: int) -> ThreadingHTTPServer:
    handler = type("RootHandler", (Handler,), {"root": root})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trix.webapp", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=None, help="the built app (default: web/dist)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    mimetypes.add_type("application/javascript", ".js")
    mimetypes.add_type("text/css", ".css")
    # The installable app's files (issue 39), whatever the host's mime.types says: the web app
    # manifest, the icons and the bundled Arabic font.
    mimetypes.add_type("application/manifest+json", ".webmanifest")
    mimetypes.add_type("image/svg+xml", ".svg")
    mimetypes.add_type("image/png", ".png")
    mimetypes.add_type("font/woff2", ".woff2")
    server = serve((args.root or default_root()).resolve(), args.host, args.port)

    def stop(_signum: int, _frame: FrameType | None) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

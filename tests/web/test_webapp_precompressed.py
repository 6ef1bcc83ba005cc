"""Issue 39: the first load on the wire under 120 KB in both languages. The build writes each
text file's brotli 11 and gzip 9 forms beside it (web/scripts/compress.mjs); trix.webapp sends
the form the client's Accept-Encoding takes, with Content-Encoding and `Vary: Accept-Encoding`,
the file as it is to a client that takes none, and never a form as a file of its own; the
edge's compressor passes those bytes through untouched (not compressed again at its lower
quality). The Arabic font, subset at build time, keeps every letter the interface shows and
the tables that shape Arabic."""

from __future__ import annotations

import gzip
import http.client
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_edge_web import _request

from conftest import WEB_DIST, WebPlatform
from trix import webapp
from trix.processes import free_port

pytestmark = pytest.mark.timeout(120)

SCRIPT = b"export const greeting = 'hello';\n" * 40
BROTLI_FORM = b"the brotli form, as the build wrote it"


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[int]:
    """trix.webapp on a free loopback port over a small built app with pre-compressed forms."""
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text('<!doctype html><script src="/assets/app-1.js"></script>')
    (tmp_path / "assets" / "app-1.js").write_bytes(SCRIPT)
    (tmp_path / "assets" / "app-1.js.br").write_bytes(BROTLI_FORM)
    (tmp_path / "assets" / "app-1.js.gz").write_bytes(gzip.compress(SCRIPT, 9))
    (tmp_path / "assets" / "font-1.woff2").write_bytes(b"wOF2" + bytes(64))
    port = free_port()
    server = webapp.serve(tmp_path, "127.0.0.1", port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _get(port: int, path: str, accept_encoding: str | None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        # skip_accept_encoding: http.client would otherwise send `Accept-Encoding: identity`
        conn.putrequest("GET", path, skip_accept_encoding=True)
        if accept_encoding is not None:
            conn.putheader("Accept-Encoding", accept_encoding)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def test_a_pre_compressed_file_is_sent_brotli_first_with_its_encoding_and_vary(served: int) -> None:
    status, headers, body = _get(served, "/assets/app-1.js", "gzip, deflate, br, zstd")
    assert status == 200 and body == BROTLI_FORM
    assert headers["content-encoding"] == "br" and headers["vary"] == "Accept-Encoding"
    assert headers["content-length"] == str(len(BROTLI_FORM))
    assert headers["content-type"].startswith(("application/javascript", "text/javascript"))  # not the form's type
    assert headers["cache-control"] == "public, max-age=31536000, immutable"


def test_gzip_goes_to_a_client_that_takes_gzip_but_not_brotli(served: int) -> None:
    for accept in ("gzip", "br;q=0, gzip;q=0.5", "*;q=1, br;q=0"):
        status, headers, body = _get(served, "/assets/app-1.js", accept)
        assert status == 200 and headers["content-encoding"] == "gzip", accept
        assert gzip.decompress(body) == SCRIPT and headers["vary"] == "Accept-Encoding"


def test_without_an_accepted_encoding_the_file_goes_as_it_is(served: int) -> None:
    for accept in (None, "identity", "deflate", "br;q=0, gzip;q=0"):
        status, headers, body = _get(served, "/assets/app-1.js", accept)
        assert status == 200 and body == SCRIPT, accept
        assert "content-encoding" not in headers and headers["vary"] == "Accept-Encoding"
        assert headers["content-length"] == str(len(SCRIPT))


def test_a_file_without_pre_compressed_forms_has_no_encoding_and_no_vary(served: int) -> None:
    status, headers, body = _get(served, "/assets/font-1.woff2", "br, gzip")
    assert status == 200 and body[:4] == b"wOF2"
    assert "content-encoding" not in headers and "vary" not in headers


def test_a_pre_compressed_form_is_never_served_as_a_file_of_its_own(served: int) -> None:
    for path in ("/assets/app-1.js.br", "/assets/app-1.js.gz"):
        status, headers, _ = _get(served, path, "br, gzip")
        assert status == 404, path
        assert "content-encoding" not in headers


def test_the_edge_passes_the_builds_brotli_form_through_untouched(web_platform: WebPlatform) -> None:
    """Through Envoy: the bytes the browser gets for the first load's script are the build's
    brotli 11 form itself (the edge's compressor skips an encoded response), and a client that
    takes gzip only gets the build's gzip 9 form."""
    _, _, page = _request(web_platform.url, "GET", "/", ca_file=web_platform.ca_file)
    script = re.findall(rb'src="(/assets/[^"]+\.js)"', page)[0].decode()
    built = WEB_DIST / script.lstrip("/")
    for accept, coding, ext in (("gzip, deflate, br", "br", ".br"), ("gzip", "gzip", ".gz")):
        status, headers, body = _request(
            web_platform.url, "GET", script, headers={"Accept-Encoding": accept}, ca_file=web_platform.ca_file
        )
        assert status == 200 and headers["content-encoding"] == coding, headers
        assert body == built.with_name(built.name + ext).read_bytes(), f"{script} ({coding}) was changed on the way"
        assert "accept-encoding" in headers["vary"].lower()


def test_the_arabic_font_subset_keeps_every_letter_the_interface_shows_and_its_shaping() -> None:
    """The bundled face, subset at build time to the Arabic block (mk/web.mk), still maps every
    Arabic character of the interface's text and keeps the layout tables that shape Arabic:
    the joined forms (GSUB init/medi/fina, the lam-alef ligature) and the marks' places (GPOS)."""
    from fontTools.ttLib import TTFont  # type: ignore[import-untyped]

    fonts = list((WEB_DIST / "assets").glob("noto-sans-arabic-*.woff2"))
    assert len(fonts) == 1, fonts
    font = TTFont(fonts[0])
    cmap = font.getBestCmap()
    sources = Path(__file__).resolve().parents[2] / "web" / "src"
    shown = {ch for f in sources.rglob("*.ts*") for ch in f.read_text(encoding="utf-8") if "\u0600" <= ch <= "\u06ff"}
    assert len(shown) > 30 and not {hex(ord(ch)) for ch in shown if ord(ch) not in cmap}
    assert all(ord(ch) in cmap for ch in "٠١٢٣٤٥٦٧٨٩،؟")  # Arabic digits and punctuation
    gsub = {r.FeatureTag for r in font["GSUB"].table.FeatureList.FeatureRecord}
    gpos = {r.FeatureTag for r in font["GPOS"].table.FeatureList.FeatureRecord}
    assert {"init", "medi", "fina", "rlig"} <= gsub and {"mark", "mkmk"} <= gpos, (gsub, gpos)
    assert not [c for c in cmap if 0xFB50 <= c <= 0xFEFF]  # the presentation forms are left out

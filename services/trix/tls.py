"""TLS for the edge, the services' gRPC and NATS.

Owns: the local certificate authority of `trix up --tls` (a CA and the certificates it signs,
written into the state folder with Python's `cryptography`), the files Envoy's file-based
secret discovery (SDS) watches so a certificate replaced on disk is served without a restart,
and the three ways a process of the project uses them: a gRPC server's credentials, a gRPC
channel that verifies the server against a CA file, and the `ssl.SSLContext` of a NATS client.
Must not contain service logic.

Without a CA file every helper here gives the plain-text channel or context of before: the
plain loopback run stays the default and pays nothing for TLS (the choice is made once, when a
channel or connection is made, never per call).
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import os
import ssl
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import grpc

if TYPE_CHECKING:
    from cryptography.x509 import GeneralName

    from trix.natsio import serverconf

CA_ENV = "TRIX_CA_FILE"
"""The CA file every client of the project verifies the edge with (`--ca FILE` beside it)."""

SERVICE_CA_ENV = "TRIX_TLS_CA_FILE"
SERVICE_CERT_ENV = "TRIX_TLS_CERT_FILE"
SERVICE_KEY_ENV = "TRIX_TLS_KEY_FILE"
"""A service's TLS files (trix.runtime.config reads them): the CA it verifies NATS and its
peers with, its gRPC server's certificate and key."""

LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
"""The names a certificate of `trix up --tls` is valid for: the processes of one machine."""

CA_CERT = "ca.crt"
CA_KEY = "ca.key"
SERVER_CERT = "tls.crt"
SERVER_KEY = "tls.key"
"""File names of a certificate folder; `tls.crt`/`tls.key` are a Kubernetes TLS Secret's keys,
so the same SDS file serves a mounted Secret and the state folder of `trix up --tls`."""

EDGE_SECRET_NAME = "edge_cert"
"""The name of the edge's certificate in Envoy's SDS file (both edges' envoy.yaml)."""


class Pki:
    """A folder holding a CA and one server certificate signed by it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.ca_cert = folder / CA_CERT
        self.ca_key = folder / CA_KEY
        self.cert = folder / SERVER_CERT
        self.key = folder / SERVER_KEY
        self.sds = folder / "sds.yaml"
        """Envoy's secret discovery file: the edge's certificate by file name."""

    def __repr__(self) -> str:
        return f"Pki({self.folder})"


def _write_private(path: Path, data: bytes) -> None:
    """Write `path` by renaming a finished temporary file into place (mode 0600): a watcher of
    the folder (Envoy's SDS) sees one move, never a half-written file."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _san(hosts: Sequence[str]) -> list[GeneralName]:
    from cryptography import x509

    names: list[GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def make_ca(folder: Path, *, common_name: str = "trix local CA", days: int = 365) -> Pki:
    """A new CA in `folder` (ca.crt, ca.key), replacing any there."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    pki = Pki(folder)
    _write_private(
        pki.ca_key,
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )
    _write_private(pki.ca_cert, cert.public_bytes(serialization.Encoding.PEM))
    return pki


def issue(pki: Pki, hosts: Sequence[str] = LOCAL_HOSTS, *, days: int = 90, folder: Path | None = None) -> Pki:
    """A server certificate for `hosts` signed by `pki`'s CA, written as tls.crt/tls.key into
    `folder` (default: the CA's), each file renamed into place (a rotation Envoy picks up)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_key = serialization.load_pem_private_key(pki.ca_key.read_bytes(), password=None)
    ca_cert = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(_san(hosts)), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    out = Pki(folder or pki.folder)
    out.folder.mkdir(parents=True, exist_ok=True)
    _write_private(
        out.key,
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )
    # The chain: the certificate, then the CA's (a client that pins the CA's key, e.g. a test's
    # browser, sees it in what the server presents).
    _write_private(out.cert, cert.public_bytes(serialization.Encoding.PEM) + pki.ca_cert.read_bytes())
    return out


def local_pki(folder: Path, hosts: Sequence[str] = LOCAL_HOSTS) -> Pki:
    """The CA and server certificate of `trix up --tls` in `folder`: the CA is kept across runs
    (clients keep trusting it), the server certificate issued anew, and the SDS file written."""
    pki = Pki(folder)
    if not (pki.ca_cert.is_file() and pki.ca_key.is_file()):
        make_ca(folder)
    issue(pki, hosts)
    write_sds(pki.sds, cert=pki.cert, key=pki.key, watched=pki.folder)
    return pki


def service_env(pki: Pki | None) -> dict[str, str]:
    """The TRIX_TLS_* variables of a service (and the provisioner) using `pki`; none without."""
    if pki is None:
        return {}
    return {SERVICE_CA_ENV: str(pki.ca_cert), SERVICE_CERT_ENV: str(pki.cert), SERVICE_KEY_ENV: str(pki.key)}


def nats_files(pki: Pki | None) -> serverconf.TlsFiles | None:
    """A nats-server's `tls {}` files from `pki`; None (plain text) without."""
    from trix.natsio import serverconf

    return None if pki is None else serverconf.TlsFiles(str(pki.cert), str(pki.key), str(pki.ca_cert))


def write_sds(path: Path, *, cert: Path, key: Path, watched: Path) -> Path:
    """Envoy's file-based SDS resource for the edge's certificate: the certificate and key by
    file name, re-read when a file is moved into `watched` (a rename into the folder, or the
    kubelet's swap of a mounted Secret's `..data` link)."""
    path.write_text(
        "resources:\n"
        '  - "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret\n'
        f"    name: {EDGE_SECRET_NAME}\n"
        "    tls_certificate:\n"
        f'      certificate_chain: {{filename: "{cert}"}}\n'
        f'      private_key: {{filename: "{key}"}}\n'
        f'      watched_directory: {{path: "{watched}"}}\n'
    )
    return path


def add_ca_argument(parser: argparse.ArgumentParser) -> None:
    """`--ca FILE` of every client command (default: $TRIX_CA_FILE): verify a TLS server (the
    edge of `trix up --tls` or a cluster) against this CA; without one, plain text."""
    parser.add_argument(
        "--ca",
        default=os.environ.get(CA_ENV, ""),
        metavar="FILE",
        help=f"CA file to verify the server's TLS certificate with (default: ${CA_ENV}; none: plain text)",
    )


# --- using the files --------------------------------------------------------------------


def server_credentials(cert_file: str, key_file: str) -> grpc.ServerCredentials:
    """A gRPC server's TLS credentials (no client certificate asked)."""
    return grpc.ssl_server_credentials([(Path(key_file).read_bytes(), Path(cert_file).read_bytes())])


def channel_credentials(ca_file: str) -> grpc.ChannelCredentials:
    """Verify the server against `ca_file` (and only it)."""
    return grpc.ssl_channel_credentials(root_certificates=Path(ca_file).read_bytes())


def aio_channel(target: str, ca_file: str | None, options: Sequence[tuple[str, object]] = ()) -> grpc.aio.Channel:
    """A grpc.aio channel to `target`: TLS verified against `ca_file`, plain text without one."""
    if ca_file:
        return grpc.aio.secure_channel(target, channel_credentials(ca_file), options=list(options))
    return grpc.aio.insecure_channel(target, options=list(options))


def sync_channel(target: str, ca_file: str | None, options: Sequence[tuple[str, object]] = ()) -> grpc.Channel:
    """The blocking twin of `aio_channel`."""
    if ca_file:
        return grpc.secure_channel(target, channel_credentials(ca_file), options=list(options))
    return grpc.insecure_channel(target, options=list(options))


def spki_sha256(cert_file: Path) -> str:
    """Base64 of the SHA-256 of the (first) certificate's public key: what Chromium's
    `--ignore-certificate-errors-spki-list` takes to trust a CA it does not ship."""
    import base64
    import hashlib

    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    key = x509.load_pem_x509_certificate(cert_file.read_bytes()).public_key()
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def client_context(ca_file: str | None) -> ssl.SSLContext | None:
    """A client's TLS context verifying the server against `ca_file` only (NATS, HTTPS); None
    without a CA file (plain text)."""
    if not ca_file:
        return None
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca_file)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx

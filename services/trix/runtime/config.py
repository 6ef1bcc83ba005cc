"""Configuration from the environment into frozen dataclasses, failing fast.

Owns: `RuntimeConfig` (the settings every service shares) and the `env_*` readers
services use for their own settings. A bad value raises `ConfigError` whose message
names the variable (`TRIX_GRPC_PORT: not an integer: 'abc'`); `trix.runtime.server.main`
prints it and exits with code 2. Must not read the environment anywhere else.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

EXIT_CONFIG_ERROR = 2


class ConfigError(Exception):
    """A configuration variable is missing or malformed; the message names it."""


def _raw(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def env_str(env: Mapping[str, str], name: str, default: str) -> str:
    """A string variable; empty or unset gives the default."""
    value = _raw(env, name)
    return default if value is None else value


def env_int(
    env: Mapping[str, str], name: str, default: int, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """An integer variable within [minimum, maximum]."""
    value = _raw(env, name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"{name}: not an integer: {value!r}") from None
    if minimum is not None and number < minimum:
        raise ConfigError(f"{name}: must be >= {minimum}: {value!r}")
    if maximum is not None and number > maximum:
        raise ConfigError(f"{name}: must be <= {maximum}: {value!r}")
    return number


def env_float(env: Mapping[str, str], name: str, default: float, *, minimum: float = 0.0) -> float:
    """A non-negative (by default) number of seconds or similar."""
    value = _raw(env, name)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"{name}: not a number: {value!r}") from None
    if not number >= minimum:  # also rejects NaN
        raise ConfigError(f"{name}: must be >= {minimum}: {value!r}")
    return number


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def env_bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    """A boolean variable: 1/0, true/false, yes/no, on/off."""
    value = _raw(env, name)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ConfigError(f"{name}: not a boolean (use true or false): {value!r}")


def env_choice(env: Mapping[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of a fixed set of strings (case-insensitive, returned as listed)."""
    value = _raw(env, name)
    if value is None:
        return default
    for choice in choices:
        if value.lower() == choice.lower():
            return choice
    raise ConfigError(f"{name}: must be one of {', '.join(choices)}: {value!r}")


NATS_READ_WINDOW_MS: dict[str, float] = {"timers": 20.0}
"""The default read window of each service's NATS connection (ADR 0019): the timers act on
deadlines of seconds and read every public batch on one subscription, so 20 ms costs them
nothing. The move path (gateway, table) reads at once by default: a window there is paid by
every step of a serial chain (a table's bots, one append after another), and measured it gained
less than the noise of this machine (ADR 0019); operators may set one.
"""


@dataclass(frozen=True)
class RuntimeConfig:
    """Settings every service shares (all from TRIX_* variables)."""

    service: str
    """Service name used in logs and metrics (not from the environment)."""
    instance: str
    """TRIX_INSTANCE: replica name, e.g. `table-1` (default: the service name)."""
    grpc_host: str
    """TRIX_GRPC_HOST: address the gRPC server binds (default 127.0.0.1)."""
    grpc_port: int
    """TRIX_GRPC_PORT: gRPC port, 0 = a free port (default 0)."""
    metrics_port: int
    """TRIX_METRICS_PORT: Prometheus HTTP port, 0 = a free port, -1 = no endpoint (default 0)."""
    nats_url: str
    """TRIX_NATS_URL: NATS server URL(s), comma separated; `none` = run without NATS."""
    shutdown_grace_s: float
    """TRIX_SHUTDOWN_GRACE_S: time in-flight calls get to finish on SIGTERM (default 10)."""
    drain_delay_s: float
    """TRIX_DRAIN_DELAY_S: time between NOT_SERVING and refusing new calls (default 0.2)."""
    reflection: bool
    """TRIX_GRPC_REFLECTION: serve gRPC reflection (default false)."""
    log_level: str
    """TRIX_LOG_LEVEL: debug, info, warning or error (default info)."""
    nats_stream_replicas: int = 1
    """TRIX_NATS_STREAM_REPLICAS: copies of every JetStream stream and KV bucket, 1..5 (default 1;
    3 on the production 3-node cluster, deploy/k8s/overlays/prod)."""
    nats_read_window_s: float = 0.0
    """TRIX_NATS_READ_WINDOW_MS: the NATS socket is read at most once per this window, so a
    busy connection takes many messages per read (`trix.natsio.coalesce`, ADR 0019); a message
    waits at most this long, and only right after another read. 0 = read at once. Default
    per service: `NATS_READ_WINDOW_MS`."""
    tls_cert_file: str = ""
    """TRIX_TLS_CERT_FILE: the gRPC server's certificate (PEM); with TRIX_TLS_KEY_FILE the server
    serves TLS only. Empty: plain text (the loopback default)."""
    tls_key_file: str = ""
    """TRIX_TLS_KEY_FILE: the key of TRIX_TLS_CERT_FILE."""
    tls_ca_file: str = ""
    """TRIX_TLS_CA_FILE: the CA this service verifies NATS and the other services' gRPC with
    (TLS to both); empty: plain text."""
    grpc_health_port: int = -1
    """TRIX_GRPC_HEALTH_PORT: a plain-text gRPC port serving the health service alone, for
    probes that cannot speak TLS (Kubernetes' gRPC probes); 0 = a free port, -1 = none (default)."""
    start_again_for_s: float = 60.0
    """TRIX_START_AGAIN_FOR_S: how long a start failing on a NATS fault is started again in the
    same process (`trix.runtime.server.run_main`); after it, a failed start exits (1) and the
    supervisor restarts the process (trix up, Kubernetes). 0 = never in process (default 60)."""

    @property
    def nats_enabled(self) -> bool:
        return self.nats_url.lower() != "none"

    @classmethod
    def from_env(cls, service: str, env: Mapping[str, str] | None = None) -> RuntimeConfig:
        e = os.environ if env is None else env
        return cls(
            service=service,
            instance=env_str(e, "TRIX_INSTANCE", service),
            grpc_host=env_str(e, "TRIX_GRPC_HOST", "127.0.0.1"),
            grpc_port=env_int(e, "TRIX_GRPC_PORT", 0, minimum=0, maximum=65535),
            metrics_port=env_int(e, "TRIX_METRICS_PORT", 0, minimum=-1, maximum=65535),
            nats_url=env_str(e, "TRIX_NATS_URL", "nats://127.0.0.1:4222"),
            shutdown_grace_s=env_float(e, "TRIX_SHUTDOWN_GRACE_S", 10.0),
            drain_delay_s=env_float(e, "TRIX_DRAIN_DELAY_S", 0.2),
            reflection=env_bool(e, "TRIX_GRPC_REFLECTION", False),
            log_level=env_choice(e, "TRIX_LOG_LEVEL", "info", ("debug", "info", "warning", "error")),
            nats_stream_replicas=env_int(e, "TRIX_NATS_STREAM_REPLICAS", 1, minimum=1, maximum=5),
            nats_read_window_s=env_float(e, "TRIX_NATS_READ_WINDOW_MS", NATS_READ_WINDOW_MS.get(service, 0.0)) / 1000.0,
            grpc_health_port=env_int(e, "TRIX_GRPC_HEALTH_PORT", -1, minimum=-1, maximum=65535),
            start_again_for_s=env_float(e, "TRIX_START_AGAIN_FOR_S", 60.0),
            **_tls_files(e),
        )


def _tls_files(env: Mapping[str, str]) -> dict[str, str]:
    """TRIX_TLS_CERT_FILE and TRIX_TLS_KEY_FILE (both or neither), TRIX_TLS_CA_FILE; the files
    are read when the server starts and each connection is made."""
    files = {
        "tls_cert_file": env_str(env, "TRIX_TLS_CERT_FILE", ""),
        "tls_key_file": env_str(env, "TRIX_TLS_KEY_FILE", ""),
        "tls_ca_file": env_str(env, "TRIX_TLS_CA_FILE", ""),
    }
    if bool(files["tls_cert_file"]) != bool(files["tls_key_file"]):
        raise ConfigError("TRIX_TLS_CERT_FILE and TRIX_TLS_KEY_FILE: set both or neither")
    return files

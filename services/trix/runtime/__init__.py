"""The one service runtime every Trix service runs on.

Owns the plumbing shared by all services: configuration from the environment
(`config`), JSON logs with request context (`logs`), Prometheus metrics (`metrics`),
the gRPC interceptors including the domain-error -> status-code mapping
(`interceptors`), and the server lifecycle with health, reflection and graceful
shutdown (`server`). It knows no service's logic.
"""

"""NATS and JetStream plumbing shared by every service.

Owns: every subject (`subjects`), every stream, bucket and consumer name (`names`), the
streams and KV buckets declared in code (`provisioning`), the users' whitelists made from
the services' declarations (`permissions`, `grants`; `trix.declarations`), the connection
that reconnects forever and re-provisions (`connection`), publishing with `Nats-Msg-Id`
and same-id retries (`publish`), and consumers idempotent by (table, sequence) (`consumer`). Named `natsio`, not `nats`,
so it never shadows the nats-py package.
"""

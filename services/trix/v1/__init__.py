"""Generated protobuf and gRPC code for package trix.v1 (see proto/generate.py)."""

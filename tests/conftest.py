"""Root conftest: loads the shared test support (tests/support/) for every test area."""

"""Root conftest: loads the shared test support (tests/support/) for every test folder.

`tests/` is on the import path by pytest's `pythonpath` setting (pyproject.toml), so
`support` imports like any package; its fixtures (a real nats-server with or without
users) are registered here for every folder.
"""

pytest_plugins = ["support.fixtures", "support.hangs"]

"""Root conftest: loads the shared test support (tests/support/) for every test folder.

`tests/` is on the import path by pytest's `pythonpath` setting (pyproject.toml), so
`support` imports like any package; its fixtures (a real nats-server with or without
users) are registered here for every folder.
"""

pytest_plugins = ["support.fixtures", "support.hangs"]


def pytest_configure(config: object) -> None:
    """grpc.aio's poller is held for the whole test process, as every service holds it
    (`trix.runtime.server.hold_grpc_aio`): each test's loop comes and goes, and without the
    hold grpc shut the poller down between two tests and its thread join could hang."""
    import asyncio

    from trix.runtime.server import hold_grpc_aio

    async def hold() -> None:
        hold_grpc_aio()

    asyncio.run(hold())

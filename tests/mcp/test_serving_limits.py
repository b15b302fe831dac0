"""How `serve` bounds and tunes what each HTTP process does (issue 10, load): tool threads
(each holds a database connection) and TCP_NODELAY on accepted connections."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from typing import Any

import anyio
import pytest
from anyio import to_thread
from uvicorn.config import Config
from uvicorn.server import ServerState

from mcp_endpoint.management.commands.serve import NODELAY_PROTOCOL, NoDelayH11Protocol


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_startup_bounds_the_tool_threads_of_a_process(settings: Any) -> None:
    from research_site.asgi import application

    settings.MCP_MAX_THREADS = 3
    assert to_thread.current_default_thread_limiter().total_tokens == 40  # anyio's default
    messages = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    with anyio.fail_after(5):
        await application({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert to_thread.current_default_thread_limiter().total_tokens == 3


class Transport:
    """The little of asyncio's transport that uvicorn's protocol asks for."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {
            "socket": self.sock,
            "sockname": self.sock.getsockname(),
            "peername": self.sock.getpeername(),
        }.get(name, default)

    def is_closing(self) -> bool:
        return False

    def set_protocol(self, protocol: Any) -> None:
        pass


@pytest.mark.anyio
async def test_accepted_connections_get_tcp_nodelay() -> None:
    config = Config(app=lambda scope, receive, send: None)
    config.load()
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
        with client, accepted:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
            protocol = NoDelayH11Protocol(config=config, server_state=ServerState(), app_state={})
            protocol.connection_made(Transport(accepted))  # type: ignore[arg-type]
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
            protocol.timeout_keep_alive_task and protocol.timeout_keep_alive_task.cancel()


def test_workers_find_the_protocol_before_django_is_set_up() -> None:
    # Each `--workers N` process imports the protocol by name before it loads the app.
    code = (
        "from uvicorn.importer import import_from_string;"
        f"print(import_from_string({NODELAY_PROTOCOL!r}).__name__)"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == NoDelayH11Protocol.__name__

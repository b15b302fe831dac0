"""uvicorn's HTTP/1.1 protocol (h11) with Nagle's algorithm off on every connection.

With `--workers N` uvicorn binds the listening socket itself and hands it to its worker
processes; the connections those accept do not get TCP_NODELAY from asyncio, so a small
response waits for the client's delayed ACK: about 45 ms more per keep-alive request
(uvicorn issue #3149, still in 0.54; measured in benchmarks/README.md, "Load"). Setting the
option ourselves makes one worker and N workers answer alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

from uvicorn.protocols.http.h11_impl import H11Protocol


class NoDelayH11Protocol(H11Protocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)

"""`serve`: run Research MCP on one of the three transports (docs/MCP.md).

    manage.py serve                                   # http on 0.0.0.0:8000 (MCP_TRANSPORT)
    manage.py serve --transport stdio --collections llm-eval
    manage.py serve --transport sse --port 9000 --directory ./kb --verbose

`http` serves the whole site with uvicorn (admin, /mcp); `sse` adds the legacy HTTP+SSE
transport at /sse and /messages/; `stdio` speaks MCP on stdin/stdout, with every log line on
stderr. Binding 0.0.0.0 is safe by default: without MCP_AUTH_TOKEN, /mcp answers loopback
clients only. Migrations run before serving. SIGTERM/SIGINT finish in-flight HTTP requests
and exit 0 (uvicorn's graceful shutdown); on stdio, end of input ends the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser
from uvicorn.protocols.http.h11_impl import H11Protocol

from core.commands import ResearchCommand
from core.knowledge_base import DEFAULT_DIRECTORY
from mcp_endpoint.scope import InvalidScope, parse_collections, set_process_default

TRANSPORTS = ("stdio", "http", "sse")
logger = logging.getLogger(__name__)


class NoDelayH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol (h11) with Nagle's algorithm off on every connection.

    With `--workers N` uvicorn binds the listening socket itself and hands it to its worker
    processes; the connections those accept do not get TCP_NODELAY from asyncio, so a small
    response waits for the client's delayed ACK: about 45 ms more per keep-alive request
    (uvicorn #3149, still in 0.54; measured in benchmarks/README.md, "Load"). Setting the
    option ourselves makes one worker and N workers answer alike. Each worker imports it by
    `NODELAY_PROTOCOL` before Django is set up, so this module imports no models.
    """

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)


NODELAY_PROTOCOL = f"{__name__}:{NoDelayH11Protocol.__name__}"


def _exit_cleanly(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def add_serve_arguments(parser: Any) -> None:
    """The command line shared by `manage.py serve` and the `research-mcp` script."""
    parser.add_argument(
        "--transport",
        choices=TRANSPORTS,
        default=None,
        help="stdio, http (default: MCP_TRANSPORT, else http) or sse.",
    )
    # docs/MCP.md's default. Safe: without MCP_AUTH_TOKEN /mcp answers loopback clients only.
    parser.add_argument(
        "--host",
        default="0.0.0.0",  # noqa: S104
        help="Address to bind for http/sse (default 0.0.0.0).",
    )
    parser.add_argument("--port", type=int, default=8000, help="Port for http/sse (default 8000).")
    parser.add_argument(
        "--directory",
        default=None,
        help=f"Knowledge-base directory (env RESEARCH_DIRECTORY, default {DEFAULT_DIRECTORY}).",
    )
    parser.add_argument("--verbose", action="store_true", help="Debug logging on stderr.")
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("--collection", default=None, help="Serve only this project.")
    scope.add_argument(
        "--collections", default=None, help="Serve only these projects (comma-separated)."
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="uvicorn worker processes for http/sse."
    )


class Command(ResearchCommand):
    help = "Serve Research MCP over stdio, Streamable HTTP (/mcp) or legacy SSE."
    # No system checks (ResearchCommand): the stdio transport must not print their output.

    def add_arguments(self, parser: CommandParser) -> None:
        add_serve_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        transport = options["transport"] or (settings.MCP_TRANSPORT or "http").lower()
        if transport not in TRANSPORTS:
            raise CommandError(f"MCP_TRANSPORT must be one of {', '.join(TRANSPORTS)}")
        self._ensure_directory(options["directory"])
        if options["verbose"]:
            self._log_debug()
        try:
            scope = parse_collections(options["collections"] or options["collection"])
        except InvalidScope as exc:
            raise CommandError(f"--collections: {exc}") from exc
        if transport == "stdio" and not settings.MCP_ENABLED:
            raise CommandError(
                "MCP is disabled (MCP_ENABLED=false): the stdio transport has nothing to "
                "serve. Set MCP_ENABLED=true, or use --transport http for the admin site alone."
            )
        if options["workers"] < 1:
            raise CommandError("--workers must be at least 1")
        if transport == "sse" and options["workers"] > 1:
            # An SSE session lives in the process that opened it; its POSTs must reach it.
            raise CommandError("--transport sse keeps sessions in memory: use --workers 1")

        self._announce_new_knowledge_base(options["directory"])
        from core.bootstrap import prepare_knowledge_base
        from mcp_endpoint.tools.engines_search import rehearse_search_papers
        from papers.search import warmup

        # One process serves (not uvicorn's workers, which start afresh): its search
        # warm-up begins now, the models before the database is checked, the rest after,
        # while the application is imported, rather than at the application's start.
        one_process = transport == "stdio" or options["workers"] == 1
        if one_process:
            warmup.load_models_early()
        # Nothing but protocol may reach stdout on stdio, so anything printed while
        # preparing goes to stderr (on every transport, for the same log stream).
        with contextlib.redirect_stdout(sys.stderr):
            prepare_knowledge_base()
        if one_process:
            warmup.start_in_background(rehearse_search_papers)
        set_process_default(scope)
        if scope:
            # For http/sse worker processes, which import the app afresh.
            os.environ["MCP_DEFAULT_COLLECTIONS"] = ",".join(scope)

        if transport == "stdio" and options["transport"] is None:
            # docs/MCP.md: MCP_TRANSPORT=stdio starts the application, HTTP site included, with
            # MCP on stdio beside it. `--transport stdio` (what desktop clients run) is
            # stdio alone: several clients each starting one must not fight over a port.
            self._serve_stdio_beside_http(options)
        elif transport == "stdio":
            self._serve_stdio()
        else:
            self._serve_http(transport, options)

    def _log_debug(self) -> None:
        """DEBUG logging that lasts: the ASGI application sets Django up again when uvicorn
        imports it (which applies settings.LOGGING anew), and worker processes load the
        settings afresh (LOG_LEVEL); a root level set here alone was undone before the
        first request, so no request was logged."""
        os.environ["LOG_LEVEL"] = "DEBUG"
        logging_config: dict[str, Any] = settings.LOGGING
        logging_config["root"]["level"] = "DEBUG"
        logging.getLogger().setLevel(logging.DEBUG)

    def _announce_new_knowledge_base(self, directory: str | None) -> None:
        """Say where a new, empty library is being created, and how to choose another: a
        server started in the wrong folder would otherwise look like a library that lost
        its papers."""
        if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3":
            return
        folder = Path(settings.RESEARCH_DIRECTORY)
        if (folder / "research.db").exists():
            return
        if directory or os.environ.get("RESEARCH_DIRECTORY"):
            logger.warning("No knowledge base in %s yet: creating a new, empty one.", folder)
            return
        logger.warning(
            "No knowledge base in %s (the default ./knowledge-base: neither --directory nor "
            "RESEARCH_DIRECTORY was given): creating a new, empty one there. To serve an "
            "existing library, pass --directory PATH.",
            folder,
        )

    def _ensure_directory(self, directory: str | None) -> None:
        """--directory has to be known before settings load (they derive every path from it).

        The `research-mcp` script sets RESEARCH_DIRECTORY before Django starts. Under
        manage.py the settings are already loaded, so the command starts itself again with
        RESEARCH_DIRECTORY set (the same arguments, stdin and stdout: safe for stdio too).
        """
        if directory is None:
            return
        wanted = Path(directory).expanduser().resolve()
        if wanted == Path(settings.RESEARCH_DIRECTORY):
            return
        if os.environ.get("RESEARCH_MCP_REEXEC") == "1" or "serve" not in sys.argv[1:2]:
            raise CommandError(
                "--directory must be known before Django loads its settings: set "
                f"RESEARCH_DIRECTORY={wanted} or use the research-mcp script."
            )
        os.environ["RESEARCH_DIRECTORY"] = str(wanted)
        os.environ["RESEARCH_MCP_REEXEC"] = "1"
        sys.stderr.flush()
        os.execv(sys.executable, [sys.executable, *sys.argv])  # noqa: S606 - our own argv

    def _serve_stdio(self) -> None:
        from mcp_endpoint.stdio import run_stdio
        from papers.search import warmup

        # Started by handle (stdio has no ASGI lifespan); its end awaited as the lifespan
        # awaits it, so the first requests do not run beside it.
        warmup.wait_until_ended()
        logger.info("Serving MCP on stdio (knowledge base %s)", settings.RESEARCH_DIRECTORY)
        run_stdio()

    def _serve_stdio_beside_http(self, options: dict[str, Any]) -> None:
        """MCP on stdio and the site (admin, REST, /mcp) on HTTP, in one process and one
        event loop. SIGTERM/SIGINT: uvicorn finishes in-flight requests, the stdio session
        is closed, exit 0. End of input: the stdio session ends and so does the site."""
        import anyio
        import uvicorn

        from mcp_endpoint.stdio import serve_stdio

        if options["workers"] > 1:
            raise CommandError("MCP on stdio beside HTTP runs in one process: use --workers 1")
        server = uvicorn.Server(self._uvicorn_config("http", options))
        logger.info(
            "Serving MCP on stdio and the site on http://%s:%s/ (knowledge base %s)",
            options["host"],
            options["port"],
            settings.RESEARCH_DIRECTORY,
        )

        async def both() -> None:
            async with anyio.create_task_group() as tasks:

                async def stdio_then_stop() -> None:
                    await serve_stdio()
                    server.should_exit = True  # the stdio client left: stop the site too

                tasks.start_soon(stdio_then_stop)
                await server.serve()
                tasks.cancel_scope.cancel()

        # uvicorn re-raises the signal it stopped on with the handlers found before it
        # started; raising SystemExit there would come out of the task group as an error.
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_IGN)
        anyio.run(both)

    def _uvicorn_config(self, transport: str, options: dict[str, Any]) -> Any:
        import uvicorn

        return uvicorn.Config(**self._uvicorn_options(transport, options))

    def _uvicorn_options(self, transport: str, options: dict[str, Any]) -> dict[str, Any]:
        """uvicorn's settings, for `uvicorn.run` and the stdio-beside-HTTP server alike."""
        # The project's ASGI module (settings.ASGI_APPLICATION) also holds the SSE variant.
        module, _, name = settings.ASGI_APPLICATION.rpartition(".")
        trusted = ",".join(settings.FORWARDED_ALLOW_IPS)
        return {
            "app": f"{module}:{'sse_application' if transport == 'sse' else name}",
            "host": options["host"],
            "port": options["port"],
            "workers": options["workers"],
            "log_level": "debug" if options["verbose"] else "info",
            # Logs stay on stderr with Django's format (and its secret filter).
            "log_config": None,
            "access_log": options["verbose"],
            # uvicorn believes X-Forwarded-For from 127.0.0.1 unless told otherwise: a
            # client could then pick its own address (and escape the failed-attempt
            # throttle). Only proxies the operator names are believed.
            "proxy_headers": bool(trusted),
            "forwarded_allow_ips": trusted or None,
            "lifespan": "on",
            "timeout_graceful_shutdown": 30,
            "http": NODELAY_PROTOCOL,
        }

    def _serve_http(self, transport: str, options: dict[str, Any]) -> None:
        import uvicorn

        host, port = options["host"], options["port"]
        if not settings.MCP_AUTH_TOKEN and host not in ("127.0.0.1", "localhost", "::1"):
            logger.warning(
                "No MCP_AUTH_TOKEN: /mcp answers loopback clients only, even on %s. "
                "Set MCP_AUTH_TOKEN to serve other machines.",
                host,
            )
        logger.info(
            "Serving %s on http://%s:%s/ (knowledge base %s)",
            "/mcp and /sse" if transport == "sse" else "/mcp and the admin",
            host,
            port,
            settings.RESEARCH_DIRECTORY,
        )
        # uvicorn finishes in-flight requests on SIGTERM/SIGINT, then re-raises the signal
        # with the handlers that were installed before it started: make that a clean exit.
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, _exit_cleanly)
        uvicorn.run(**self._uvicorn_options(transport, options))

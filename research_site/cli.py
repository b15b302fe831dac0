"""The console scripts: `serve` without manage.py.

    research-mcp --transport stdio --directory ~/papers --collections thesis
    paper-search-mcp --directory ~/papers          # always stdio

`research-mcp` accepts exactly the arguments of `manage.py serve`; `paper-search-mcp` is
the name earlier clients were configured with, for the same server, always on stdio
(`--transport` is not accepted).
--directory is applied before Django reads its settings, which derive every path
(database, exports, cache) from it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    _serve("research-mcp", list(sys.argv[1:] if argv is None else argv))


def paper_search_main(argv: Sequence[str] | None = None) -> None:
    """`paper-search-mcp`, the name earlier clients were configured with (docs/MCP.md): the
    server on stdio."""
    _serve("paper-search-mcp", list(sys.argv[1:] if argv is None else argv), stdio_only=True)


def _serve(prog: str, args: list[str], *, stdio_only: bool = False) -> None:
    from mcp_endpoint.management.commands.serve import add_serve_arguments

    parser = argparse.ArgumentParser(prog=prog, description="Serve Research MCP.")
    add_serve_arguments(parser)
    if stdio_only:
        parser.description = "Serve Research MCP on stdio (paper-search-mcp)."
    options = parser.parse_args(args)  # --help and usage errors exit here, before Django
    if stdio_only:
        if options.transport not in (None, "stdio"):
            parser.error("paper-search-mcp serves stdio only; use research-mcp for http/sse")
        if options.transport is None:
            args = ["--transport", "stdio", *args]
    if options.directory:
        os.environ["RESEARCH_DIRECTORY"] = os.path.abspath(os.path.expanduser(options.directory))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")

    from django.core.management import execute_from_command_line

    execute_from_command_line(["research-mcp", "serve", *args])


if __name__ == "__main__":
    main()

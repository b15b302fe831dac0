"""The `research-mcp` console script: `serve` without manage.py.

    research-mcp --transport stdio --directory ~/papers --collections thesis

It accepts exactly the arguments of `manage.py serve`. --directory is applied before
Django reads its settings, which derive every path (database, exports, cache) from it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    from mcp_endpoint.management.commands.serve import add_serve_arguments

    parser = argparse.ArgumentParser(prog="research-mcp", description="Serve Research MCP.")
    add_serve_arguments(parser)
    options = parser.parse_args(args)  # --help and usage errors exit here, before Django
    if options.directory:
        os.environ["RESEARCH_DIRECTORY"] = os.path.abspath(os.path.expanduser(options.directory))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")

    from django.core.management import execute_from_command_line

    execute_from_command_line(["research-mcp", "serve", *args])


if __name__ == "__main__":
    main()

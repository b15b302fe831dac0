"""The reference for the endpoint's own cost: a minimal MCP server on the SDK alone.

    RESEARCH_DIRECTORY=<kb> python benchmarks/reference_server.py --port 8001 [--search service]

One `MCPServer` with one tool, `search(query, limit)`, served the way the SDK documents a
stateless deployment (`streamable_http_app(stateless_http=True, json_response=True)`) by one
uvicorn process. No middleware, no registry, no engines layer, no response model beyond ids
and titles. The tool's search is one of:

- `fts5` (the default): the library's FTS5 query (`papers_paper_fts MATCH ? ORDER BY rank`)
  with the standard library's sqlite3 on the knowledge base's own research.db, no Django:
  what any MCP endpoint over that index must cost at least;
- `service`: the very function `search_papers` runs for `engines: "local"`
  (`papers.search.local.local_search`: query understanding, BM25 and the semantic re-rank),
  inside Django: the same search work as ours, so the difference is the endpoint's own cost.

`benchmarks/bench_endpoint.py` runs them side by side with `manage.py serve`.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import uvicorn
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel
from starlette.applications import Starlette

_local = threading.local()


def _connection() -> sqlite3.Connection:
    if not hasattr(_local, "db"):
        path = Path(os.environ["RESEARCH_DIRECTORY"]) / "research.db"
        _local.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    return _local.db


class Hit(BaseModel):
    paper_id: int
    title: str


class Hits(BaseModel):
    hits: list[Hit]


server = MCPServer("reference")


def fts5_search(query: str, limit: int) -> Hits:
    rows = (
        _connection()
        .execute(
            "SELECT f.rowid, p.title FROM papers_paper_fts f "
            "JOIN papers_paper p ON p.paper_id = f.rowid "
            "WHERE papers_paper_fts MATCH ? ORDER BY rank LIMIT ?",
            (query, limit),
        )
        .fetchall()
    )
    return Hits(hits=[Hit(paper_id=row[0], title=row[1]) for row in rows])


def service_search() -> Callable[[str, int], Hits]:
    """`search_papers`' own library search, Django set up as `manage.py serve` does."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")
    import django

    django.setup()
    from papers.search.local import local_search

    def search(query: str, limit: int) -> Hits:
        page = local_search(query=query, limit=limit)
        return Hits(
            hits=[
                Hit(paper_id=hit.record["paper_id"], title=hit.record["title"]) for hit in page.hits
            ]
        )

    return search


def app_for(search: Callable[[str, int], Hits]) -> Starlette:
    @server.tool(name="search", description="Search the library.")
    def search_tool(query: str, limit: int = 10) -> Hits:
        return search(query, limit)

    return server.streamable_http_app(stateless_http=True, json_response=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--search", choices=("fts5", "service"), default="fts5")
    options = parser.parse_args()
    app = app_for(fts5_search if options.search == "fts5" else service_search())
    uvicorn.run(app, host=options.host, port=options.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()

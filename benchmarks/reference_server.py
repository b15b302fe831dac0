"""The reference for the endpoint's own cost: a minimal MCP server on the SDK alone.

    RESEARCH_DIRECTORY=<kb> python benchmarks/reference_server.py --port 8001

One `MCPServer` with one tool, `search(query, limit)`, that runs the library's FTS5 query
(`papers_paper_fts MATCH ? ORDER BY rank`) with the standard library's sqlite3 on the
knowledge base's own research.db, served the way the SDK documents a stateless deployment
(`streamable_http_app(stateless_http=True, json_response=True)`) by one uvicorn process.
No Django, no middleware, no registry: what any MCP endpoint must cost at least.
`benchmarks/bench_endpoint.py` runs it side by side with `manage.py serve`.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import threading
from pathlib import Path

import uvicorn
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

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


@server.tool(name="search", description="Full-text search of the library (FTS5).")
def search(query: str, limit: int = 10) -> Hits:
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


app = server.streamable_http_app(stateless_http=True, json_response=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    options = parser.parse_args()
    uvicorn.run(app, host=options.host, port=options.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()

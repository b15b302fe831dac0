"""PDF speed through the `pdf` tools over `/mcp`: get_pdf_outline, read_pdf_pages (one page,
all pages) and create_highlight, as an agent calls them.

    .venv/bin/python benchmarks/bench_pdf.py [--repeats 20] [--pdf FILE ...]

Attaches the fixture PDFs (tests/fixtures/pdfs: 4, 8 and 13 pages) and a 37-page PDF put
together from them to papers in a temporary knowledge base (SQLite; the attach is set-up,
not timed), starts `manage.py serve --transport http` on it and times each tool call
`--repeats` times from one keep-alive client (benchmarks/mcp_server.py). Prints a markdown
table of medians and of the server's first call of each tool on each PDF (which pays
MuPDF's one-time set-up for that file). Each highlight call finds a 12-word passage that
wraps a line on page 1 and adds a new annotation, so the annotated copy grows as it would in
use. Goals: a page <= 20 ms, a highlight <= 100 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_server import McpServer

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "pdfs"
DEFAULT_PDFS = ["2304.02623v1.pdf", "1111.2011v2.pdf", "papermage.pdf"]
GOALS = {"one page": 20.0, "highlight": 100.0}


def server_env(directory: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "MCP_AUTH_TOKEN")}
    env.update(
        DJANGO_SETTINGS_MODULE="research_site.settings",
        RESEARCH_DIRECTORY=directory,
        EMBEDDINGS_ENABLED="false",
        LOG_LEVEL="WARNING",
        MCP_REQUIRE_COLLECTION="false",
    )
    return env


def setup_django(directory: str) -> None:
    os.environ.update(server_env(directory))
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def assemble_37_pages(target: Path) -> Path:
    """papermage (13) + papermage (13) + 1111.2011v2 (8) + the first 3 pages of 2304."""
    import pymupdf

    with pymupdf.open() as document:
        for name, last in (("papermage.pdf", -1), ("papermage.pdf", -1),
                           ("1111.2011v2.pdf", -1), ("2304.02623v1.pdf", 2)):  # fmt: skip
            with pymupdf.open(FIXTURES / name) as part:
                document.insert_pdf(part, to_page=last)
        document.save(target, garbage=3, deflate=True)
    return target


def wrapped_passage(path: Path) -> str:
    """12 words of page 1 that run over a line break (the harder case for finding)."""
    import pymupdf

    with pymupdf.open(path) as document:
        words = document[0].get_text("words")
    for start in range(len(words) // 3, len(words) - 12):
        chunk = words[start : start + 12]
        lines = {(w[5], w[6]) for w in chunk}
        if len(lines) == 2 and all(any(c.isalpha() for c in w[4]) for w in chunk):
            return " ".join(w[4] for w in chunk)
    raise SystemExit(f"{path.name}: no wrapped passage on page 1")


def timed(function: Callable[[], float], repeats: int) -> tuple[float, float]:
    """(first call, median of the following `repeats` calls), in milliseconds; `function`
    returns the milliseconds of its own tool call."""
    first = function()
    return first, statistics.median(function() for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--pdf", action="append", type=Path, help="Extra PDF files to time.")
    args = parser.parse_args()
    work = ROOT / "benchmarks" / ".work"
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work, prefix="bench-pdf-") as directory:
        setup_django(directory)
        from papers.pdf import services
        from papers.schemas import PaperRecord
        from papers.services import paper_upsert

        pdfs = [FIXTURES / name for name in DEFAULT_PDFS]
        pdfs.append(assemble_37_pages(Path(directory) / "assembled-37-pages.pdf"))
        pdfs += args.pdf or []
        attached = []
        for index, path in enumerate(pdfs):
            paper, _ = paper_upsert(
                record=PaperRecord.build(title=f"Benchmark paper {index}", year=2024)
            )
            record = services.pdf_attach_file(paper_id=paper.pk, path=path)
            attached.append((path, paper.pk, record.page_count, wrapped_passage(path)))
        rows = []
        with McpServer(server_env(directory)) as server:

            def tool(name: str, **arguments: Any) -> Callable[[], float]:
                return lambda: server.call_tool(name, arguments)[0]

            for path, paper_id, page_count, passage in attached:
                middle = str(max(1, page_count // 2))
                operations = {
                    "outline": tool("get_pdf_outline", paper_id=paper_id),
                    "one page": tool("read_pdf_pages", paper_id=paper_id, pages=middle),
                    "all pages": tool(
                        "read_pdf_pages", paper_id=paper_id, pages="all", max_chars=1_000_000
                    ),
                    "highlight": tool(
                        "create_highlight",
                        paper_id=paper_id,
                        page=1,
                        text=passage,
                        color="positive",
                        comment="benchmark",
                    ),
                }
                for operation, function in operations.items():
                    first, median = timed(function, args.repeats)
                    rows.append((path.name, page_count, operation, first, median))
                    print(f"{path.name} {operation}: {median:.1f} ms", file=sys.stderr)

    print(f"\nTool calls over /mcp, medians over {args.repeats} calls after a first one (ms):\n")
    print("| PDF | pages | operation | first call | median | goal |")
    print("|---|---:|---|---:|---:|---|")
    for name, pages, operation, first, median in rows:
        goal = GOALS.get(operation)
        verdict = "" if goal is None else f"≤ {goal:g}: {'met' if median <= goal else 'not met'}"
        print(f"| {name} | {pages} | {operation} | {first:.1f} | {median:.1f} | {verdict} |")


if __name__ == "__main__":
    main()

"""PDF speed: outline, one page, all pages, a highlight and the markdown conversion, through
the same selectors and services the `pdf` tools call.

    .venv/bin/python benchmarks/bench_pdf.py [--repeats 20] [--pdf FILE ...]

Attaches the fixture PDFs (tests/fixtures/pdfs: 4, 8 and 13 pages) and a 37-page PDF put
together from them to papers in a temporary knowledge base (SQLite), then times each
operation `--repeats` times and prints a markdown table of medians (and the first call of
the process, which pays MuPDF's one-time font set-up). Each highlight call finds a
12-word passage that wraps a line on page 1 and adds a new annotation, so the annotated
copy grows as it would in use. Goals (issue 7): a page <= 20 ms, a highlight <= 100 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "pdfs"
DEFAULT_PDFS = ["2304.02623v1.pdf", "1111.2011v2.pdf", "papermage.pdf"]
GOALS = {"one page": 20.0, "highlight": 100.0}


def setup_django(directory: str) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "research_site.settings"
    os.environ["RESEARCH_DIRECTORY"] = directory
    os.environ["EMBEDDINGS_ENABLED"] = "false"
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


def timed(function: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """(first call, median of the following `repeats` calls), in milliseconds."""
    start = time.perf_counter()
    function()
    first = (time.perf_counter() - start) * 1000
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1000)
    return first, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--pdf", action="append", type=Path, help="Extra PDF files to time.")
    args = parser.parse_args()
    work = ROOT / "benchmarks" / ".work"
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work, prefix="bench-pdf-") as directory:
        setup_django(directory)
        from papers.models import Paper
        from papers.pdf import selectors, services
        from papers.pdf.markdown import document_markdown
        from papers.schemas import PaperRecord
        from papers.services import paper_upsert

        pdfs = [FIXTURES / name for name in DEFAULT_PDFS]
        pdfs.append(assemble_37_pages(Path(directory) / "assembled-37-pages.pdf"))
        pdfs += args.pdf or []
        rows = []
        for index, path in enumerate(pdfs):
            paper: Paper
            paper, _ = paper_upsert(
                record=PaperRecord.build(title=f"Benchmark paper {index}", year=2024)
            )
            record = services.pdf_attach_file(paper_id=paper.pk, path=path)
            passage = wrapped_passage(path)
            middle = str(max(1, record.page_count // 2))

            def markdown(record: Any = record) -> str:
                with selectors.pdf_open(record) as document:
                    return document_markdown(document)

            operations: dict[str, Callable[[], Any]] = {
                "outline": lambda p=paper: selectors.pdf_outline_get(paper=p),
                "one page": lambda p=paper, m=middle: selectors.pdf_pages_read(paper=p, pages=m),
                "all pages": lambda p=paper: selectors.pdf_pages_read(paper=p, pages="all"),
                "highlight": lambda p=paper, t=passage: services.annotation_highlight_create(
                    paper=p, page=1, text=t, color="positive", comment="benchmark"
                ),
                "markdown": markdown,
            }
            for operation, function in operations.items():
                first, median = timed(function, args.repeats)
                rows.append((path.name, record.page_count, operation, first, median))
                print(f"{path.name} {operation}: {median:.1f} ms", file=sys.stderr)

    print(f"\nMedians over {args.repeats} calls after a first one (ms):\n")
    print("| PDF | pages | operation | first call | median | goal |")
    print("|---|---:|---|---:|---:|---|")
    for name, pages, operation, first, median in rows:
        goal = GOALS.get(operation)
        verdict = "" if goal is None else (f"<= {goal:g} ✓" if median <= goal else f"<= {goal:g} ✗")
        print(f"| {name} | {pages} | {operation} | {first:.1f} | {median:.1f} | {verdict} |")


if __name__ == "__main__":
    main()

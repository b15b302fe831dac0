"""Every published figure comes from a kept benchmark: README.md, docs/ and
benchmarks/README.md hold no measured figure or goal mark of their own. The figures live in
benchmarks/RESULTS.md, which `make bench` (benchmarks/run_all.py) writes from the
benchmarks' output with the date, commit and machine of each run; the docs link to it, or
quote it between

    <!-- quote: benchmarks/RESULTS.md -->
    ...lines copied from RESULTS.md...
    <!-- /quote -->

and every quoted line must then be in RESULTS.md as it is today (so a re-run that changes a
figure makes the quote fail until it is copied again).

What counts as a figure: a goal mark ("met", "not met", ✓, ✗), a latency or rate
(`12.3 ms`, `86 req/s`, `1,678 records/s`), a percentile or median with a number after it
(`p50 8.7`), a retrieval score (`nDCG@10 0.700`). Limits and goals (`≤ 20 ms`, `< 60 s`)
are requirements, not measurements, and may stay. docs/MUTATION.md and docs/TESTING.md are
left out: the mutation report is written by its own command (`make mutation`), not by the
benchmarks.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
NOT_BENCHMARK_FIGURES = {"MUTATION.md", "TESTING.md"}
DOCS = sorted(
    [ROOT / "README.md", ROOT / "benchmarks" / "README.md"]
    + [p for p in (ROOT / "docs").glob("*.md") if p.name not in NOT_BENCHMARK_FIGURES]
)
QUOTE = re.compile(r"<!-- quote: benchmarks/RESULTS\.md -->\n(.*?)<!-- /quote -->", re.S)
NUMBER = r"\d[\d,]*(?:\.\d+)?"
# A bound before a number makes it a requirement ("p50 ≤ 20 ms"), not a measurement.
BOUND = r"(?<![≤≥<>=~]\s)(?<![≤≥<>=~])(?<!up to )(?<!at most )(?<!within )"
FIGURE = re.compile(
    "|".join(
        [
            r"(?<![\w`-])(?:\*\*)?not met\b",
            r"(?:[:|]\s*|\*\*)met\b",
            r"\d[)%×x]?\s+(?:\*\*)?met\b",
            r"[✓✗]",
            rf"{BOUND}(?<![\w.]){NUMBER}\s?(?:ms|req/s|records/s|papers/s|calls/s)\b",
            rf"\b(?:p50|p90|p95|p99|median)\b[^\n|.;]{{0,12}}?{BOUND}\b{NUMBER}(?!\s?(?:%|×|x\b))",
            rf"(?:ndcg@10|recall@100)\b[^\n|]{{0,12}}?{BOUND}\b\d\.\d{{2,3}}\b",
        ]
    ),
    re.IGNORECASE,
)


# A table whose header names a measurement: any decimal in its rows is a figure.
MEASUREMENT_HEADER = re.compile(
    r"ndcg|recall@|\bp50\b|\bp95\b|\bp90\b|median|req/s|\bms\b|papers/s|records/s", re.I
)


def figures_outside_quotes(text: str) -> list[str]:
    """The lines holding a figure, quoted blocks and inline code (log line examples such as
    `ok in 12.4 ms`) left out."""
    text = QUOTE.sub("", text)
    text = re.sub(r"`[^`]*`", lambda code: "``" + "\n" * code.group(0).count("\n"), text)
    found = []
    header = ""  # the header row of the markdown table the line is in, if any
    for number, line in enumerate(text.splitlines(), 1):
        header = (header or line) if line.startswith("|") else ""
        in_measurement_table = line != header and MEASUREMENT_HEADER.search(header)
        if FIGURE.search(line) or (in_measurement_table and re.search(r"\d\.\d", line)):
            found.append(f"{number}: {line.strip()[:160]}")
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_doc_publishes_no_figure_of_its_own(doc: Path) -> None:
    found = figures_outside_quotes(doc.read_text(encoding="utf-8"))
    assert not found, (
        f"{doc.relative_to(ROOT)} publishes figures no benchmark run wrote; link to "
        "benchmarks/RESULTS.md (make bench) or quote it:\n" + "\n".join(found)
    )


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_quoted_figure_is_in_the_results_as_they_are(doc: Path) -> None:
    results = set(RESULTS.read_text(encoding="utf-8").splitlines())
    for block in QUOTE.findall(doc.read_text(encoding="utf-8")):
        for line in block.strip().splitlines():
            if line.startswith("```"):
                continue  # the fence of a quoted plain-text table, not a quoted line
            assert line in results, (
                f"{doc.relative_to(ROOT)} quotes a line RESULTS.md lacks: {line}"
            )


def test_every_result_section_says_when_where_and_how_it_was_made() -> None:
    text = RESULTS.read_text(encoding="utf-8")
    sections = re.findall(r"<!-- bench:([\w-]+) -->\n(.*?)<!-- /bench:\1 -->", text, re.S)
    assert len(sections) >= 10
    for name, body in sections:
        if "Not run yet" in body:
            continue
        for label in ("**Run**", "commit", "**Machine**", "cores", "load average", "**Command**"):
            assert label in body, f"RESULTS.md section {name} lacks {label}"
        assert "quick mode" in body or "**full**" in body, f"section {name}: full or quick?"


def test_the_figure_pattern_catches_what_the_docs_used_to_publish() -> None:
    # Lines the docs published before issue 25: the test must see each as a figure.
    published = [
        "| `/mcp` search_papers, 1 client | 8.7 | 16.0 | 11.0 | 58.3 | p50 ≤ 15: met |",
        "| 3 (50/100/200 ms), `run_calls` | engines/http.py | **6.6** | 10.8 | met |",
        "| facets | 5.7 | 144.1 | 56.3 | 283.0 | ≤ 50: p50 met, p95 **not met** |",
        "| 2304.02623v1.pdf | 4 | one page | 15.6 | 17.1 | <= 20 ✓ |",
        "the same call takes 6 ms. With autovacuum on",
        "`semantic_search`, top 10, 200 title queries | p50 14.4 ms, p95 22.8 ms",
        "| BM25, ours (FTS5 porter bm25, any-word query) | **0.690** | 0.929 | ≥ 0.66: **met** |",
        "1 client: 16 req/s, p50 56 ms",
        "(0.700 first tier; nDCG@10 0.649 second)",
        "Goals: SciFact test ≥ 0.70 met (0.700 first",
        "| run | nDCG@10 | Recall@100 |\n|---|---|---|\n| semantic, first tier | 0.509 | 0.858 |",
    ]
    for line in published:
        assert figures_outside_quotes(line), line
    requirements = [
        "Goals (issue 7): a page ≤ 20 ms, a highlight ≤ 100 ms.",
        "Goal: the Paper list and a project's page render in ≤ 300 ms",
        "a call still running after `--cap-seconds` is interrupted",
        "The metric is met when the suite is green",
    ]
    for line in requirements:
        assert not figures_outside_quotes(line), line

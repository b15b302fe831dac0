"""What engine failures cost an agent: the size of a `search_papers` answer when every
engine is down (no network), in tokens.

    .venv/bin/python benchmarks/bench_failure_tokens.py

The setting of benchmarks/bench_offline.py (embedded default, every default engine pointed
at a host that never resolves, a two-paper library), through the MCP tool's own function.
Three answers: the first search (each engine fails name resolution), the next one with no
`engines` (the breakers are open now), and the next one naming every engine. Tokens are
cl100k tokens when tiktoken is installed, else characters / 4 (the table says which).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import bench_offline  # noqa: E402

QUERY = "transformers for long documents"
EVERY_ENGINE = ["local", *bench_offline.URL_SETTINGS]


def counter() -> tuple[str, Any]:
    try:
        import tiktoken
    except ImportError:
        return "characters / 4", lambda text: round(len(text) / 4)
    encoding = tiktoken.get_encoding("cl100k_base")
    return "cl100k (tiktoken)", lambda text: len(encoding.encode(text))


def answer(fn: Any, **arguments: Any) -> tuple[str, bool]:
    """The text an agent reads, and whether it is an isError result."""
    result = fn(query=QUERY, limit=5, **arguments)
    return result.content[0].text, bool(result.is_error)


def main() -> None:
    directory = Path(tempfile.mkdtemp(prefix="bench-failure-tokens-"))
    bench_offline.environment(directory)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from mcp_endpoint.registry import build_registry
    from papers.schemas import PaperRecord
    from papers.services import papers_upsert

    papers_upsert(
        records=[
            PaperRecord.build(
                title="Longformer: The Long-Document Transformer", authors=["Iz Beltagy"],
                year=2020, abstract="A transformer for long documents with sparse attention.",
            ),
        ]
    )  # fmt: skip
    search = build_registry(toolsets=["search"], read_only=False).tools["search_papers"].fn
    unit, tokens = counter()
    bench_offline.fresh_engines()
    rows = []
    for label, arguments in (
        ("first search, no `engines` (each engine fails name resolution)", {}),
        ("next search, no `engines` (breakers open)", {}),
        ("next search, every engine named (breakers open)", {"engines": EVERY_ENGINE}),
    ):
        text, is_error = answer(search, **arguments)
        page = json.loads(text)
        failed = {
            name: status
            for name, status in page.get("engines", {}).items()
            if status.get("status") != "ok"
        }
        failure_text = json.dumps(failed) + json.dumps(page.get("notes", []))
        rows.append(
            f"| {label} | {tokens(text)} | {tokens(failure_text)} | "
            f"{tokens(failure_text) / max(1, tokens(text)):.0%} | {is_error} |"
        )
    print(f"tokens: {unit}")
    print("| answer | tokens | engines' failures and notes | share | isError |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()

"""The review tests' library (CORPUS, citations), a tool caller over the review tools that
raises ToolError, the PRISMA count check, and the labelled screening sets."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from mcp_types import CallToolResult

from mcp_endpoint.registry import Registry
from mcp_endpoint.tools import review as review_tools
from papers.schemas import PaperRecord
from papers.services import citations_add, papers_upsert
from projects.review.simulation import (
    LabelledRecord,
)

TOPIC = [
    "sparse attention transformer for long documents",
    "long document transformer with local and global attention",
    "efficient attention for long sequences of text",
    "transformer language model over book length documents",
    "linear attention scaling to long documents",
    "memory efficient transformer for long legal documents",
]


OTHER = [
    "coral reef acoustic monitoring with hydrophones",
    "zebra stripes and thermoregulation in the savanna",
    "graph convolutional networks for node classification",
    "crop yield prediction from satellite images",
    "power transformers in electrical distribution grids",
    "protein folding with molecular dynamics",
    "urban traffic flow simulation",
    "bird migration tracked by radar",
    "soil carbon in temperate forests",
    "ocean wave energy converters",
    "volcanic ash dispersion forecasting",
    "rainfall runoff models for small catchments",
    "classroom attention of primary school pupils",
    "archiving historical paper documents in libraries",
]


def labelled() -> list[LabelledRecord]:
    records = [LabelledRecord(f"t{i}", text, "", True) for i, text in enumerate(TOPIC)]
    records += [LabelledRecord(f"o{i}", text, "", False) for i, text in enumerate(OTHER)]
    # Search order: the off-topic records first.
    return records[len(TOPIC) :] + records[: len(TOPIC)]


def write_sets(folder: Path) -> dict[str, Path]:
    records = labelled()
    csv_path = folder / "set.csv"
    lines = ["title,abstract,label_included"]
    lines += [f'"{r.title}","",{int(r.included)}' for r in records]
    csv_path.write_text("\n".join(lines) + "\n")
    jsonl = folder / "set.jsonl"
    jsonl.write_text(
        "".join(
            json.dumps({"title": r.title, "abstract": "", "label_included": int(r.included)}) + "\n"
            for r in records
        )
    )
    ris = folder / "set.ris"
    ris.write_text(
        "".join(
            f"TY  - JOUR\nTI  - {r.title}\nAB  - about it\n"
            f"N1  - {'ASReview_relevant' if r.included else 'ASReview_irrelevant'}\nER  - \n"
            for r in records
        )
    )
    return {"csv": csv_path, "jsonl": jsonl, "ris": ris}


LONG_DOCS = "How do transformers handle long documents?"


CORPUS = {
    "attention": dict(
        title="Attention Is All You Need", authors=["Ashish Vaswani"], year=2017,
        abstract="The transformer, based solely on attention, for sequence transduction.",
    ),
    "longformer": dict(
        title="Longformer: The Long-Document Transformer", authors=["Iz Beltagy"], year=2020,
        abstract="A transformer for long documents with sparse attention.",
        arxiv_id="2004.05150",
    ),
    "bigbird": dict(
        title="Big Bird: Transformers for Longer Sequences", authors=["Manzil Zaheer"],
        year=2020, abstract="Sparse attention makes transformers scale to long sequences.",
    ),
    "reformer": dict(
        title="Reformer: The Efficient Transformer", authors=["Nikita Kitaev"], year=2020,
        abstract="An efficient transformer with locality-sensitive hashing.",
    ),
    "gcn": dict(
        title="Semi-Supervised Classification with Graph Convolutional Networks",
        authors=["Thomas Kipf"], year=2017,
        abstract="Graph convolutional networks for node classification.",
    ),
    "shannon": dict(
        title="A Mathematical Theory of Communication", authors=["Claude Shannon"], year=1948,
        abstract="Information sent over noisy channels, and long documents of text.",
    ),
    # Cite Longformer/Big Bird without sharing their words: found only by citation search.
    "zebra": dict(
        title="Zebra Stripes and Thermoregulation", authors=["Ada Zoologist"], year=2022,
        abstract="Stripes cool the animal.",
    ),
    "coral": dict(
        title="Coral Reef Acoustic Monitoring", authors=["Bea Marine"], year=2023,
        abstract="Hydrophones record reefs.",
    ),
}  # fmt: skip


CITATIONS = [("zebra", "longformer"), ("coral", "longformer"), ("coral", "bigbird")]


def build_library() -> dict[str, int]:
    """The corpus above, through the importers' service; name -> paper_id."""
    records = [PaperRecord.build(**values) for values in CORPUS.values()]
    ids = dict(zip(CORPUS, papers_upsert(records=records).paper_ids, strict=True))
    citations_add(pairs=[(ids[a], ids[b]) for a, b in CITATIONS])
    return ids


class ToolError(Exception):
    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body.get("message"))
        self.code = body["code"]
        self.body = body


class AbsentIsNone(dict[str, Any]):
    def __missing__(self, key: str) -> None:
        return None


@dataclass
class Tools:
    """The `review` tool set, called in-process. A domain error raises ToolError with its
    isError body; an InvalidInput raises MCPError (-32602), as over /mcp."""

    read_only: bool = False
    fns: dict[str, Callable[..., Any]] = field(default_factory=dict)
    aliases: dict[str, dict[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        registry = Registry(read_only=self.read_only, selected=frozenset({"review"}))
        registry._current_set = "review"
        review_tools.register(registry)
        self.fns = {name: tool.fn for name, tool in registry.tools.items()}
        self.aliases = registry.aliases

    def __call__(self, name: str, **arguments: Any) -> dict[str, Any]:
        # The names the registry accepts besides the listed ones (max_results -> limit).
        renamed = self.aliases.get(name, {})
        result = self.fns[name](**{renamed.get(k, k): v for k, v in arguments.items()})
        assert isinstance(result, CallToolResult)
        # Answers leave null fields out (docs/MCP.md "Responses"): absent reads as None.
        body = json.loads(result.content[0].text, object_hook=AbsentIsNone)
        if result.is_error:
            raise ToolError(body["error"])
        return cast(dict[str, Any], body)

    def start(self, query: str = LONG_DOCS, **arguments: Any) -> dict[str, Any]:
        arguments.setdefault("domain", "general")
        return self("start_review", query=query, **arguments)

    def decide(self, state: dict[str, Any], action: str, **arguments: Any) -> dict[str, Any]:
        return self("decide", session_id=state["session_id"], action=action, **arguments)

    def get(self, state: dict[str, Any], **arguments: Any) -> dict[str, Any]:
        return self("get_session", session_id=state["session_id"], **arguments)


def assert_counts_add_up(counts: dict[str, Any]) -> None:
    """Every record identified is a duplicate, outside the dates, over the limit or screened;
    every screened paper is pending, excluded or included."""
    for block in (counts, counts.get("citation_search")):
        if not block:
            continue
        assert block["identified_total"] == sum(block["identified"].values())
        assert block["identified_total"] == (
            block["duplicates_removed"] + block["outside_date_range"] + block["over_limit"]
            + block["screened"]
        )  # fmt: skip
        assert block["screened"] == block["pending"] + block["excluded"] + block["included"]
        assert sum(block["excluded_reasons"].values()) == block["excluded"]

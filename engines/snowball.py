"""Citation snowballing's walk: from seed papers to the works they cite
(`references`, backward) and the works citing them (`citing`, forward), one or two steps out.

`citations_walk` asks every engine that has the operation (OpenAlex, Semantic Scholar,
Crossref for references; OpenAlex, Semantic Scholar, Google Scholar for citing) about every
paper of a level in one parallel fan-out (engines/runner.py: rate limits, deadlines,
breakers, cache), and reads the library's own recorded citations (engine `local`) beside
them. What the engines return is merged into the library by the importers' de-duplication
(`papers_upsert`: DOI, arXiv id, OpenAlex/S2 ids, then title + year + first author), so a
work that OpenAlex, Semantic Scholar and Crossref all name is one paper, and a work reached
again at depth 2 is the same paper as at depth 1. Every edge is recorded as a Citation.

Each work found carries `via`: the seeds it connects to, directly (depth 1) or through the
depth-1 work it was reached from (depth 2). Works rank by how many seeds they connect to,
then by citation count. Depth 2 expands only the best MAX_FRONTIER depth-1 works (at most
`limit`), and no walk makes more than MAX_ENGINE_CALLS engine calls, so a walk's cost is
bounded whatever the seeds. An engine that fails is reported in `engines` (per-engine
outcome and last failure); the others' results stand.

The callers live in projects: projects/snowball.py (the `expand_by_citations` tool: seeds
from a project, versions of one work shown once, results filed into a project) and the
review's expand step (projects/review/searching.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.errors import EngineUnavailable, InvalidInput
from engines.base import CITING, REFERENCES
from engines.registry import LOCAL_ENGINE, registry
from engines.runner import EngineCall, EngineOutcome, start_calls
from engines.services import paper_ref
from papers.models import Citation, Paper
from papers.schemas import PaperRecord
from papers.services import citations_add, papers_upsert_retrying

DIRECTIONS = {"references": (REFERENCES,), "citing": (CITING,), "both": (REFERENCES, CITING)}
MAX_DEPTH = 2
MAX_SEEDS = 25
# Engine calls one walk may make, over both depths (a call is one operation on one engine
# for one paper; OpenAlex and Crossref reference lookups are two requests each).
MAX_ENGINE_CALLS = 60
# Depth-1 works expanded at depth 2 (fewer when `limit` is smaller or calls run out).
MAX_FRONTIER = 10
# Records asked of an engine per call: `limit`, within these bounds.
MIN_PER_CALL, MAX_PER_CALL = 20, 100


@dataclass
class Reached:
    """A library paper the walk reached: at which depth first, in what order, through which
    seeds (`via`: seed paper_ids) and engines."""

    paper_id: int
    depth: int
    first_seen: int
    via: set[int] = field(default_factory=set)
    engines: list[str] = field(default_factory=list)
    citation_count: int = 0

    def rank_key(self) -> tuple[int, int, int, int]:
        return (-len(self.via), -self.citation_count, self.depth, self.first_seen)


@dataclass
class Walk:
    """What a walk found (ranked by `ranked()`), per-engine status, and what it cost."""

    seeds: list[int]
    reached: dict[int, Reached] = field(default_factory=dict)
    engines: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: int = 0
    created: int = 0
    edges: int = 0
    notes: list[str] = field(default_factory=list)

    def ranked(self) -> list[Reached]:
        return sorted(self.reached.values(), key=Reached.rank_key)

    def _status(self, engine: str) -> dict[str, Any]:
        return self.engines.setdefault(
            engine, {"outcome": "ok", "calls": 0, "answered": 0, "records": 0}
        )

    def count(self, outcome: EngineOutcome) -> None:
        status = self._status(outcome.engine)
        status["calls"] += 1
        if outcome.ok:
            status["answered"] += 1
            status["records"] += len(outcome.result or [])
        elif outcome.status in ("not_found", "unsupported"):
            status["answered"] += 1  # the engine answered: it has nothing for this paper
        else:
            summary = outcome.summary()
            status["last_failure"] = {
                key: summary[key] for key in ("outcome", "reason", "message") if key in summary
            }
        failed = status["calls"] - status["answered"]
        status["outcome"] = (
            "ok"
            if not failed
            else "partial"
            if status["answered"]
            else status["last_failure"]["outcome"]
        )


def direction_operations(direction: str) -> tuple[str, ...]:
    if direction not in DIRECTIONS:
        raise InvalidInput(f"direction must be one of {', '.join(DIRECTIONS)}.", field="direction")
    return DIRECTIONS[direction]


def engines_for(operation: str, engine_ids: Sequence[str] | None) -> list[str]:
    """The engines to ask for `operation`: of `engine_ids` (None: local and every available
    engine) those that have it; `local` (the library's citations) has both."""
    if engine_ids is None:
        found = [e.id for e in registry.engines().values() if e.is_available()]
        engine_ids = [LOCAL_ENGINE, *found]
    chosen = []
    for engine_id in dict.fromkeys(engine_ids):
        if engine_id == LOCAL_ENGINE:
            chosen.append(engine_id)
            continue
        try:
            if operation in registry.get(engine_id).operations:
                chosen.append(engine_id)
        except EngineUnavailable:
            chosen.append(engine_id)  # asked anyway, so its status says why not
    return chosen


def citations_walk(
    *,
    seeds: Sequence[Paper],
    direction: str,
    depth: int = 1,
    limit: int = 20,
    engine_ids: Sequence[str] | None = None,
) -> Walk:
    """Walk the citation graph from `seeds` (see the module docstring). Saves every work
    found into the library and records the citations; writes nothing else. Engine failures
    are statuses, never errors. Raises InvalidInput for a bad direction or depth."""
    operations = direction_operations(direction)
    if depth not in range(1, MAX_DEPTH + 1):
        raise InvalidInput(f"depth must be 1 to {MAX_DEPTH}.", field="depth")
    walk = Walk(seeds=[seed.pk for seed in seeds])
    asked = {op: engines_for(op, engine_ids) for op in operations}
    per_call = max(MIN_PER_CALL, min(MAX_PER_CALL, limit))
    via_of = {seed.pk: {seed.pk} for seed in seeds}
    nodes = list(seeds)
    for level in range(1, depth + 1):
        if level == 2:
            external = sum(len([e for e in a if e != LOCAL_ENGINE]) for a in asked.values())
            room = (MAX_ENGINE_CALLS - walk.calls) // max(1, external)
            frontier = [r.paper_id for r in walk.ranked() if r.depth == 1]
            frontier = frontier[: max(0, min(limit, MAX_FRONTIER, room))]
            if not frontier:
                break
            via_of = {pk: set(walk.reached[pk].via) for pk in frontier}
            by_pk = Paper.objects.in_bulk(frontier)
            nodes = [by_pk[pk] for pk in frontier if pk in by_pk]
        _expand(walk, nodes, asked, per_call, via_of, level)
    counts = dict(
        Paper.objects.filter(pk__in=list(walk.reached)).values_list("pk", "citation_count")
    )
    for item in walk.reached.values():
        item.citation_count = counts.get(item.paper_id) or 0
    return walk


def _expand(
    walk: Walk,
    nodes: list[Paper],
    asked: dict[str, list[str]],
    per_call: int,
    via_of: dict[int, set[int]],
    level: int,
) -> None:
    """One level: ask every engine about every node at once, save, link."""
    calls: list[EngineCall] = []
    owners: list[tuple[int, str]] = []
    skipped = 0
    for node in nodes:
        ref = paper_ref(node)
        for operation, engine_ids in asked.items():
            for engine_id in engine_ids:
                if engine_id == LOCAL_ENGINE:
                    continue
                if walk.calls + len(calls) >= MAX_ENGINE_CALLS:
                    skipped += 1
                    continue
                make = EngineCall.references if operation == REFERENCES else EngineCall.citing
                calls.append(make(engine_id, ref, per_call))
                owners.append((node.pk, operation))
    if skipped:
        walk.notes.append(
            f"Depth {level}: {skipped} engine calls not made (at most {MAX_ENGINE_CALLS} per "
            "expansion); give fewer seeds or engines to follow them all."
        )
    outcomes = start_calls(calls).wait() if calls else []
    walk.calls += len(calls)
    records: list[PaperRecord] = []
    found_by: list[tuple[int, str, str]] = []
    for outcome, (node_pk, operation) in zip(outcomes, owners, strict=True):
        walk.count(outcome)
        if outcome.ok:
            for record in outcome.records():
                records.append(record)
                found_by.append((node_pk, operation, outcome.engine))
    edges: list[tuple[int, int]] = []
    if records:
        saved = papers_upsert_retrying(records=records)
        walk.created += saved.created
        for (node_pk, operation, engine), paper_id in zip(found_by, saved.paper_ids, strict=True):
            edges.append(_link(walk, node_pk, paper_id, operation, engine, via_of, level))
    node_ids = [node.pk for node in nodes]
    for operation, engine_ids in asked.items():
        if LOCAL_ENGINE not in engine_ids:
            continue
        recorded = (
            Citation.objects.filter(citing_id__in=node_ids).values_list("citing_id", "cited_id")
            if operation == REFERENCES
            else Citation.objects.filter(cited_id__in=node_ids).values_list("cited_id", "citing_id")
        )
        rows = list(recorded)
        local = walk._status(LOCAL_ENGINE)
        local["calls"] += len(node_ids)
        local["answered"] += len(node_ids)
        local["records"] += len(rows)
        for node_pk, paper_id in rows:
            _link(walk, node_pk, paper_id, operation, LOCAL_ENGINE, via_of, level)
    walk.edges += citations_add(pairs=edges)


def _link(
    walk: Walk,
    node_pk: int,
    paper_id: int,
    operation: str,
    engine: str,
    via_of: dict[int, set[int]],
    level: int,
) -> tuple[int, int]:
    """Note that `paper_id` was reached from `node_pk`; the citation edge it stands for."""
    edge = (node_pk, paper_id) if operation == REFERENCES else (paper_id, node_pk)
    if paper_id in walk.seeds or paper_id == node_pk:
        return edge
    item = walk.reached.get(paper_id)
    if item is None:
        item = walk.reached[paper_id] = Reached(paper_id, level, first_seen=len(walk.reached))
    item.via |= via_of[node_pk]
    if engine not in item.engines:
        item.engines.append(engine)
    return edge

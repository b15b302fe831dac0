"""Citation snowballing as a tool: `expand_by_citations` takes its seeds
from paper ids or a project, walks the citation graph (engines/snowball.py: references
and/or citing papers, to depth 2, each work once, ranked by the seeds it connects to),
shows versions of one work (a preprint and its publication: projects/review/dedup.py) once,
and optionally files the results into the project. The review's expand step uses the walk
directly (projects/review/searching.py), with its own ranking and version grouping.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from core.errors import InvalidInput
from engines.snowball import MAX_SEEDS, citations_walk, direction_operations
from papers.models import Paper
from papers.scoping import client_project_ids
from papers.selectors import papers_in_scope, papers_resolve
from projects.review.dedup import work_groups, works_load
from projects.selectors import project_get
from projects.services import fileable_by_client, newest_paper_id, project_add_papers


@dataclass
class Expansion:
    """expand_by_citations' answer: results best first (at most `limit`)."""

    seeds: list[int]
    results: list[dict[str, Any]]
    found: int
    new_to_library: int
    engines: dict[str, dict[str, Any]]
    engine_calls: int
    added_to_project: int | None
    notes: list[str]

    def as_dict(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        if self.added_to_project is None:
            data.pop("added_to_project")
        return data


def seeds_resolve(
    *,
    paper_ids: Sequence[str | int] | None,
    project_id: str | None,
    scope: Sequence[str] | None,
) -> tuple[list[Paper], list[str]]:
    """The seed papers: `paper_ids` if given, else the papers of `project_id` (the first
    MAX_SEEDS added, with a note when there are more). InvalidInput / NotFound otherwise."""
    notes: list[str] = []
    if paper_ids:
        if len(paper_ids) > MAX_SEEDS:
            raise InvalidInput(f"At most {MAX_SEEDS} seed papers.", field="paper_ids")
        pks = papers_resolve(refs=paper_ids, scope=scope)
    elif project_id:
        project = project_get(ref=project_id, scope=scope)
        linked = Paper.objects.filter(project_links__project=project)
        pks = list(linked.order_by("project_links__added_at", "pk").values_list("pk", flat=True))
        if not pks:
            raise InvalidInput(
                f"Project {project_id!r} has no papers to start from.", field="project_id"
            )
        if len(pks) > MAX_SEEDS:
            notes.append(f"Started from the first {MAX_SEEDS} of the project's {len(pks)} papers.")
            pks = pks[:MAX_SEEDS]
    else:
        raise InvalidInput("Give paper_ids or a project_id to start from.", field="paper_ids")
    by_pk = papers_in_scope(scope).in_bulk(pks)
    return [by_pk[pk] for pk in pks if pk in by_pk], notes


def expand_by_citations(
    *,
    paper_ids: Sequence[str | int] | None = None,
    project_id: str | None = None,
    direction: str = "both",
    depth: int = 1,
    limit: int = 20,
    engines: Sequence[str] | None = None,
    add_to_project: bool = False,
    scope: Sequence[str] | None = None,
) -> Expansion:
    """Snowball from the seeds (paper_ids, else the project's papers): walk, group versions
    of one work, rank, and with `add_to_project` file the results into `project_id`.

    Saves the works found into the library and records their citations. Raises InvalidInput
    (no seeds, bad direction/depth/limit, add_to_project without project_id) or NotFound
    (an unknown paper or project)."""
    direction_operations(direction)
    if not 1 <= limit <= 100:
        raise InvalidInput("limit must be 1 to 100.", field="limit")
    if add_to_project and not project_id:
        raise InvalidInput("add_to_project needs a project_id.", field="add_to_project")
    target = project_get(ref=project_id, scope=scope) if project_id else None
    seeds, notes = seeds_resolve(paper_ids=paper_ids, project_id=project_id, scope=scope)
    floor = newest_paper_id() if client_project_ids() is not None else None
    walk = citations_walk(
        seeds=seeds, direction=direction, depth=depth, limit=limit, engine_ids=engines
    )
    ranked = walk.ranked()
    order = [item.paper_id for item in ranked]
    grouping = work_groups(
        order, works_load([*order, *walk.seeds]), known={pk: pk for pk in walk.seeds}
    )
    if grouping.attached:
        notes.append(
            f"{len(grouping.attached)} works found are versions of a seed paper; left out."
        )
    works = []
    for group in grouping.groups:
        head = walk.reached[group[0]]
        for pk in group[1:]:  # one work: its versions' connections are its own
            member = walk.reached[pk]
            head.via |= member.via
            head.engines += [e for e in member.engines if e not in head.engines]
            head.depth = min(head.depth, member.depth)
            head.citation_count = max(head.citation_count, member.citation_count)
        works.append((head, group[1:]))
    works.sort(key=lambda work: work[0].rank_key())
    if floor is not None:  # a scoped client: library papers outside its collections stay out
        fileable = set(
            fileable_by_client([head.paper_id for head, _ in works], created_after=floor)
        )
        works = [work for work in works if work[0].paper_id in fileable]
    kept = works[:limit]
    added = None
    if add_to_project and target is not None:
        with transaction.atomic():
            added = project_add_papers(project=target, paper_ids=[h.paper_id for h, _ in kept])
    rows = Paper.objects.in_bulk([head.paper_id for head, _ in kept])
    results = []
    for head, versions in kept:
        paper = rows.get(head.paper_id)
        if paper is None:
            continue
        entry: dict[str, Any] = {
            "paper_id": paper.pk,
            "title": paper.title,
            "year": paper.year,
            "connects_to": len(head.via),
            "via": sorted(head.via),
            "depth": head.depth,
            "engines": head.engines,
        }
        if versions:
            entry["versions"] = versions
        results.append(entry)
    failed = [e for e, s in walk.engines.items() if s["outcome"] != "ok"]
    if failed:
        notes.append("Some engines failed; results are from the others: " + ", ".join(failed))
    return Expansion(
        seeds=walk.seeds,
        results=results,
        found=len(works),
        new_to_library=walk.created,
        engines=walk.engines,
        engine_calls=walk.calls,
        added_to_project=added,
        notes=[*notes, *walk.notes],
    )

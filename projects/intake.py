"""Papers the engines find, filed into projects as they enter the library.

The engine services (engines/services.py) save what they find into the library; these
add it to projects in the same step, through their `on_saved` hook: external papers in the
upsert's transaction, then the library's own hits. It lives here because it needs both
apps and projects is the upper one (docs/LAYERS.md). The MCP tools and the REST endpoints
that take a `project_id` call these; everything else calls the engine services directly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from core.errors import Conflict, InvalidInput
from engines import services as engine_services
from engines.runner import EngineCall
from engines.services import AddedPaper, EngineSearchResult
from papers import scoping
from papers.duplicates import records_duplicates
from papers.models import Paper
from papers.schemas import PaperRecord
from papers.search.types import SearchPage
from papers.services import papers_upsert_retrying
from projects.retractions import retractions_check_soon
from projects.services import projects_adder


class OutsideCollections(Conflict):
    """The library holds the paper, but not in the client's collections."""

    code = "outside_collections"


def outside_collections_check(paper_id: int, *, identifier: str) -> None:
    """Raise OutsideCollections when a scoped client may not see the paper it just named
    (projects_adder did not file it). The answer says that much and nothing of the paper:
    the identifier was the client's, and adding it again would create a duplicate."""
    if scoping.client_project_ids() is None:
        return
    if not scoping.papers_in_scope(None).filter(pk=paper_id).exists():
        raise OutsideCollections(
            f"The library already holds {identifier!r}, outside your collections: it was "
            "not added to them. Ask someone with access to the whole library to file it "
            "in one of your collections.",
            identifier=identifier,
        )


def engines_search(
    *,
    calls: list[EngineCall],
    local: Callable[[], SearchPage] | None,
    project_ids: Sequence[str] = (),
    save: bool = True,
) -> EngineSearchResult:
    """engines.services.engines_search, adding every paper it returns to `project_ids`
    (when it saves: not in read-only mode, where a note says so). Each result that was
    added then carries the (first) project's `project_id`, as seed 004's results do."""
    result = engine_services.engines_search(
        calls=calls, local=local, save=save, on_saved=projects_adder(project_ids)
    )
    if project_ids and save:
        for entry in result.results:
            if entry.get("paper_id") is not None:
                entry["project_id"] = project_ids[0]
    return result


def citing_papers(
    *,
    paper: Paper,
    engine_ids: list[str],
    max_results: int,
    scope: Sequence[str] | None,
    project_ids: Sequence[str] = (),
    save: bool = True,
) -> EngineSearchResult:
    """engines.services.citing_papers, adding the citing papers to `project_ids`."""
    return engine_services.citing_papers(
        paper=paper, engine_ids=engine_ids, max_results=max_results, scope=scope, save=save,
        on_saved=projects_adder(project_ids),
    )  # fmt: skip


def paper_add_by_identifier(*, identifier: str, project_ids: Sequence[str] = ()) -> AddedPaper:
    """engines.services.paper_add_by_identifier, adding the paper (new or already in the
    library) to `project_ids`, and queues a retraction check of a new paper. Raises what
    it raises: InvalidInput, NotFound, EngineUnavailable; and OutsideCollections when a
    client scoped to collections names a paper the library holds outside them (neither
    filed nor shown: see docs/SECURITY.md)."""
    added = engine_services.paper_add_by_identifier(
        identifier=identifier, on_saved=projects_adder(project_ids)
    )
    outside_collections_check(added.paper.pk, identifier=identifier)
    if added.created:  # checked for retractions in the background (projects/retractions.py)
        retractions_check_soon([added.paper.pk])
    return added


def paper_add_from_metadata(
    *, values: dict[str, Any], identifier: str | None = None, project_ids: Sequence[str] = ()
) -> AddedPaper:
    """Add a paper from its metadata alone (title, authors, year, venue, doi, arxiv_id,
    source_url, abstract ...: PaperRecord.build's fields), asking no engine, so it works
    offline. `identifier` (a DOI, arXiv, ACL or OpenAlex id, or a URL holding one) and an
    identifier found in `source_url` are recorded with it.

    The record is matched against the library as imports are (papers.duplicates, the
    importers' de-duplication): a paper already there is not duplicated but returned
    (created false), with what the record adds merged in as an import merges it. Filed into
    `project_ids` either way; a scoped client naming a paper outside its collections gets
    OutsideCollections before anything is written. Raises InvalidInput (no title, a bad
    value, an unrecognised identifier)."""
    values = dict(values)
    for text in (identifier, values.get("source_url")):
        if not text:
            continue
        try:
            parsed = engine_services.identifier_parse(text)
        except InvalidInput:
            if text is identifier:
                raise
            continue  # a landing page that names no identifier: kept as the paper's url
        if parsed.kind == "doi":
            values.setdefault("doi", parsed.value)
        elif parsed.kind == "arxiv":
            values.setdefault("arxiv_id", parsed.value)
        else:
            values["identifiers"] = {parsed.kind: parsed.value, **values.get("identifiers", {})}
    record = PaperRecord.build(**values)
    existing = records_duplicates(records=[record])[0].paper_id
    if existing is not None:
        outside_collections_check(existing, identifier=identifier or record.title)
    outcome = papers_upsert_retrying(records=[record], on_saved=projects_adder(project_ids))
    paper = Paper.objects.get(pk=outcome.paper_ids[0])
    created = outcome.created > 0
    if created:
        retractions_check_soon([paper.pk])
    notes = [] if created else ["Already in the library (matched as imports are); not duplicated."]
    return AddedPaper(paper, created, {}, notes)

"""Papers the engines find, filed into projects as they enter the library.

The engine services (engines/services.py) save what they find into the library; these
add it to projects in the same step, through their `on_saved` hook: external papers in the
upsert's transaction, then the library's own hits. It lives here because it needs both
apps and projects is the upper one (docs/LAYERS.md).

`search_everywhere` and `search_by_author_everywhere` are the whole multi-engine search
(engines chosen, library searched, results saved and filed, notes): MCP `search_papers` /
`search_by_author` and REST `/api/engines/search` / `/search/author` call them with the
same arguments and return their `MultiEnginePage` as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.errors import Conflict, EnginesUnavailable, InvalidInput
from engines import services as engine_services
from engines.base import AUTHOR, CITING, SEARCH, SearchRequest
from engines.registry import LOCAL_ENGINE
from engines.runner import EngineCall, EngineOutcome
from engines.schemas import EngineResult, MultiEnginePage, engine_statuses
from engines.search_strings import is_search_string
from engines.services import (
    AddedPaper,
    EngineChoice,
    EngineSearchResult,
    engine_searches,
    engines_choose,
)
from papers import scoping
from papers.duplicates import records_duplicates
from papers.models import Paper
from papers.related import RelatedResult, papers_related
from papers.schemas import PaperRecord
from papers.search import analysis
from papers.search.filters import filters_as_dict
from papers.search.listings import paper_search_by_author
from papers.search.local import local_search, search_filters_build, year_of
from papers.search.query import PLAIN_TEXT_FROM_CHARS
from papers.search.types import SearchPage
from papers.services import papers_upsert_retrying
from projects import permissions
from projects.retractions import retractions_check_soon
from projects.selectors import project_get
from projects.services import projects_adder

EngineArg = str | Sequence[str] | None


# External engines are sent at most this many words of a long text (a pasted abstract):
# their query languages choke on pages of text, and a question's first content words carry
# its subject. The library ranks the whole text (docs/SEARCH.md, "Long queries").
ENGINE_QUERY_WORDS = 12


def engine_query_text(query: str) -> tuple[str, tuple[str, ...]]:
    """The query sent to external engines, and a note when it was shortened: a text longer
    than PLAIN_TEXT_FROM_CHARS is cut to its first ENGINE_QUERY_WORDS distinct content
    words (stop words left out)."""
    if len(query) <= PLAIN_TEXT_FROM_CHARS:
        return query, ()
    kept: list[str] = []
    for word in analysis.words(query):
        if not analysis.is_stop_word(word) and word not in kept:
            kept.append(word)
        if len(kept) == ENGINE_QUERY_WORDS:
            break
    text = " ".join(kept)
    return text, (f"External engines were asked for the text's first content words: {text!r}.",)


def projects_to_file(
    project_id: str | None, scope: Sequence[str] | None, has_external: bool
) -> tuple[list[str], list[str]]:
    """The projects a search's results are added to, and a note when the scope chose it: a
    client scoped to collections that names no project gets external results filed into
    its first collection, or it could not see them again."""
    if project_id:
        project = project_get(ref=project_id, scope=scope)
        permissions.require(project, permissions.EDIT)  # before anything is searched
        return [project.id], []
    if scope and has_external:
        note = f"External results were added to your collection {scope[0]!r} so you can see them."
        return [scope[0]], [note]
    return [], []


def search_everywhere(
    *,
    query: str,
    engines: EngineArg = None,
    limit: int,
    offset: int = 0,
    project_id: str | None = None,
    date_from: str | None = None,
    date_to: str | None = None,
    categories: Sequence[str] = (),
    filters: dict[str, Any] | None = None,
    rerank: bool | None = None,
    scope: Sequence[str] | None = None,
    save: bool = True,
) -> MultiEnginePage:
    """The library and the engines searched for `query` (`limit` results per engine;
    `filters`, `rerank` and `offset` apply to the library). Raises InvalidInput (unknown
    engine, bad filter), NotFound (project), EnginesUnavailable (no result and no engine
    that answered: see `_answer`)."""
    choice = engines_choose(engines, operation=SEARCH)
    written = is_search_string(query)
    engine_query, engine_notes = (query, ()) if written else engine_query_text(query)
    request = SearchRequest(
        query=engine_query, max_results=limit, date_from=date_from, date_to=date_to,
        categories=tuple(categories),
    )  # fmt: skip
    searches = engine_searches(engine_ids=choice.external, request=request, local_query=query)
    local_from, local_to = searches.local_dates
    applied = search_filters_build(
        payload=filters, date_from=local_from, date_to=local_to, scope=scope
    )

    def local() -> SearchPage:
        return local_search(
            query=searches.local_query, filters=applied, limit=limit, offset=offset,
            scope=scope, rerank=rerank,
        )  # fmt: skip

    asks_engines = bool(searches.calls or searches.refused)
    translation_notes = [
        note for note in searches.notes if choice.local or not note.startswith(f"{LOCAL_ENGINE}: ")
    ]
    notes = (*(engine_notes if searches.calls else ()), *translation_notes)
    search = _Search(query, limit, offset, filters_as_dict(applied), notes)
    return _answer(
        search, choice, searches.calls, local, project_id=project_id, scope=scope, save=save,
        refused=searches.refused, local_query=searches.local_query if asks_engines else None,
    )  # fmt: skip


def search_by_author_everywhere(
    *,
    author_name: str,
    engines: EngineArg = None,
    limit: int,
    offset: int = 0,
    project_id: str | None = None,
    date_from: str | None = None,
    date_to: str | None = None,
    scope: Sequence[str] | None = None,
    save: bool = True,
) -> MultiEnginePage:
    """An author's papers from the library and the engines; as `search_everywhere`."""
    choice = engines_choose(engines, operation=AUTHOR)
    request = SearchRequest(
        query=author_name, max_results=limit, date_from=date_from, date_to=date_to
    )

    def local() -> SearchPage:
        return paper_search_by_author(
            name=author_name, year_from=year_of(date_from), year_to=year_of(date_to),
            limit=limit, offset=offset, scope=scope,
        )  # fmt: skip

    calls = [EngineCall.author(e, author_name, request) for e in choice.external]
    search = _Search(author_name, limit, offset, {"author": author_name})
    return _answer(search, choice, calls, local, project_id=project_id, scope=scope, save=save)


@dataclass(frozen=True)
class _Search:
    query: str
    limit: int
    offset: int
    filters: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def _answer(
    search: _Search,
    choice: EngineChoice,
    calls: list[EngineCall],
    local: Callable[[], SearchPage],
    *,
    project_id: str | None,
    scope: Sequence[str] | None,
    save: bool,
    refused: Sequence[EngineOutcome] = (),
    local_query: str | None = None,
) -> MultiEnginePage:
    """Run the search and shape its page. No result while no external engine answered
    (each failed, or was skipped as down) is not an empty answer but EnginesUnavailable,
    naming each engine and why: the agent cannot tell "nothing matches" from it otherwise.
    Some engines failing is still a success, each failure said once in its status."""
    project_ids, notes = projects_to_file(project_id, scope, bool(calls))
    result = engines_search(
        calls=calls, local=local if choice.local else None, project_ids=project_ids, save=save,
        refused=refused, local_query=local_query,
    )  # fmt: skip
    wanted_external = bool(calls or refused or choice.skipped)
    answered = [
        name for name, status in result.engines.items()
        if name != LOCAL_ENGINE and status["status"] == "ok"
    ]  # fmt: skip
    page = result.local_page
    # What the search understood and did (the library's reading of the query, the
    # project, the engines chosen), said on the page and on the error alike.
    said = [
        *(page.notes if page else []), *notes, *search.notes, *choice.notes(), *result.notes,
    ]  # fmt: skip
    if not result.results and wanted_external and not answered:
        down = {name: s for name, s in result.engines.items() if name != LOCAL_ENGINE}
        for name, why in choice.skipped.items():
            down[name] = {"status": "unavailable", "reason": "known_down", "message": why}
        library = "no match in the library" if choice.local else "the library was not searched"
        raise EnginesUnavailable(
            f"No results: {library}, and no engine answered ({', '.join(down)}).",
            engines=down, **({"notes": said} if said else {}),
        )  # fmt: skip
    local_more = bool(page and page.has_more)
    external = sum(1 for entry in result.results if entry["engine"] != LOCAL_ENGINE)
    return MultiEnginePage(
        query=search.query,
        engines=engine_statuses(result.engines),
        results=[EngineResult.model_validate(entry) for entry in result.results],
        total=(page.total if page else 0) + external,
        limit=search.limit,
        offset=search.offset,
        mode=page.mode if page else None,
        has_more=local_more,
        next_offset=page.next_offset if page else None,
        saved=result.saved,
        project_id=project_ids[0] if project_ids else None,
        filters=search.filters,
        notes=said,
    )


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
    refused: Sequence[EngineOutcome] = (),
    local_query: str | None = None,
) -> EngineSearchResult:
    """engines.services.engines_search, adding every paper it returns to `project_ids`
    (when it saves: not in read-only mode, where a note says so). Each result that was
    added then carries the (first) project's `project_id`."""
    result = engine_services.engines_search(
        calls=calls, local=local, save=save, on_saved=projects_adder(project_ids),
        refused=refused, local_query=local_query,
    )  # fmt: skip
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


@dataclass
class RelatedFound:
    """`papers_related`'s answer, and the engines asked for citing papers first (if any)."""

    related: RelatedResult
    engines: dict[str, dict[str, Any]]
    notes: list[str]


def related_papers_fetching_citing(
    *,
    paper: Paper,
    limit: int,
    similarity_threshold: float,
    engines: EngineArg = None,
    project_id: str | None = None,
    scope: Sequence[str] | None = None,
    save: bool = True,
) -> RelatedFound:
    """The library's papers related to `paper`; with `engines`, those engines are first
    asked for the papers citing it, which are saved with the citation (and filed as a
    search's results are), so the citation component counts what they know."""
    statuses: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    if engines:
        resolved = engine_services.engine_ids_resolve(engines, operation=CITING)
        engine_ids = [engine_id for engine_id in resolved if engine_id != LOCAL_ENGINE]
        project_ids, notes = projects_to_file(project_id, scope, bool(engine_ids))
        fetched = citing_papers(
            paper=paper, engine_ids=engine_ids, max_results=limit, scope=scope,
            project_ids=project_ids, save=save,
        )  # fmt: skip
        statuses, notes = fetched.engines, [*notes, *fetched.notes]
    related = papers_related(
        paper=paper, limit=limit, similarity_threshold=similarity_threshold,
        scope=list(scope) if scope is not None else None,
    )  # fmt: skip
    return RelatedFound(related, statuses, [*notes, *related.notes])


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

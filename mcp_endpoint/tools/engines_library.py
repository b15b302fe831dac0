"""Tool set `library`, part 2: tools that reach outside the library or analyse it
(`add_paper`, `get_citing_papers`, `find_related_papers`, `analyze_paper_trends`).

`find_related_papers` scores the library (papers/related.py); with `engines` it first asks
those engines for the papers citing the reference paper and records them, so the citation
component grows with what the engines know (projects/intake.py). `analyze_paper_trends`
counts authors, keywords, categories, venues or years over given papers or a project
(papers/trends.py)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field

from core.errors import InvalidInput
from engines.base import CITING
from engines.schemas import CitingPage, EngineStatus
from engines.services import engine_ids_resolve
from mcp_endpoint.registry import (
    EXTERNAL_SEARCH,
    READ_ONLY,
    SEARCH_AND_KEEP,
    Registry,
    mcp_tool,
    serving_read_only,
)
from mcp_endpoint.scope import current_scope
from mcp_endpoint.tools.engines_search import (
    EngineResult,
    Engines,
    MaxResults,
    ProjectTag,
    tag_projects,
)
from mcp_endpoint.tools.library import PaperRef
from papers.related import DEFAULT_THRESHOLD
from papers.selectors import paper_detail, paper_get
from papers.trends import papers_trends_by_ref
from projects.intake import (
    citing_papers,
    paper_add_by_identifier,
    paper_add_from_metadata,
    related_papers_fetching_citing,
)

AuthorName = Annotated[str, Field(max_length=300)]


class AddedPaperResult(BaseModel):
    model_config = ConfigDict(extra="allow")

    created: bool = Field(description="false: the paper was already in the library.")
    paper: dict[str, Any] = Field(description="The full record, as get_paper_details.")
    engines: dict[str, EngineStatus] = Field(description="The engines asked and their status.")
    notes: list[str] = Field(default_factory=list)


class RelatedPage(BaseModel):
    model_config = ConfigDict(extra="allow")

    paper: dict[str, Any] = Field(description="The reference paper.")
    results: list[dict[str, Any]] = Field(
        description="Related papers, most similar first, each with similarity (0-1), reasons "
        "(shared keywords, categories, references, citations, embedding) and components."
    )
    weights: dict[str, float] = Field(description="How the components were weighted.")
    similarity_threshold: float
    engines: dict[str, EngineStatus] = Field(
        default_factory=dict, description="Engines asked for citing papers first, if any."
    )
    notes: list[str] = Field(default_factory=list)


class TrendsResult(BaseModel):
    model_config = ConfigDict(extra="allow")

    analysis_type: str
    items: list[dict[str, Any]] = Field(
        description="Counts to draw: {name, paper_count} (authors also first_year/last_year); "
        "timeline: {year, paper_count} for every year, zeros included."
    )
    summary: dict[str, Any]
    notes: list[str] = Field(default_factory=list)


@mcp_tool(
    name="add_paper",
    title="Add a paper",
    description=(
        "Add a paper by identifier (DOI, arXiv, PMID, PMCID, OpenReview, OpenAlex or ACL "
        "Anthology id, or a URL), the engines filling in the rest; or, with a title, as "
        "given (no engine asked). A paper already there comes back with created=false."
    ),
    annotations=EXTERNAL_SEARCH,
)
def add_paper(
    identifier: Annotated[str | None, Field(min_length=1, max_length=500)] = None,
    project_id: ProjectTag = None,
    title: Annotated[str | None, Field(min_length=1, max_length=1000)] = None,
    authors: Annotated[list[AuthorName] | None, Field(max_length=200)] = None,
    year: Annotated[int | None, Field(ge=1000, le=2200)] = None,
    venue: Annotated[str | None, Field(max_length=500)] = None,
    url: Annotated[str | None, Field(max_length=2000)] = None,
    abstract: Annotated[str | None, Field(max_length=20_000)] = None,
) -> AddedPaperResult:
    project_ids, notes = tag_projects(project_id, True)
    metadata = {"authors": authors, "year": year, "venue": venue, "source_url": url,
                "abstract": abstract}  # fmt: skip
    if title is not None:
        given = {name: value for name, value in metadata.items() if value is not None}
        added = paper_add_from_metadata(
            values={"title": title, **given}, identifier=identifier, project_ids=project_ids
        )
    elif identifier is None or any(value is not None for value in metadata.values()):
        raise InvalidInput(
            "Give an identifier (the engines fill in the rest), or a title with the other "
            "metadata to add the paper as given.",
            field="title",
        )
    else:
        added = paper_add_by_identifier(identifier=identifier, project_ids=project_ids)
    return AddedPaperResult(
        created=added.created,
        paper=paper_detail(ref=added.paper.pk),
        engines={name: EngineStatus.model_validate(s) for name, s in added.engines.items()},
        notes=[*notes, *added.notes],
    )


@mcp_tool(
    name="get_citing_papers",
    title="Citing papers",
    description=(
        "Papers citing a paper: those the library records (engine local) and those the "
        "engines find (Google Scholar, OpenAlex, Semantic Scholar)."
    ),
    annotations=SEARCH_AND_KEEP,
    saves_results=True,
    aliases={"max_results": "limit"},
)
def get_citing_papers(
    paper_id: PaperRef,
    limit: MaxResults = 10,
    engines: Engines = None,
    project_id: ProjectTag = None,
) -> CitingPage:
    scope = current_scope()
    paper = paper_get(ref=paper_id, scope=scope)
    engine_ids = engine_ids_resolve(engines, operation=CITING)
    external = any(engine_id != "local" for engine_id in engine_ids)
    project_ids, notes = tag_projects(project_id, external)
    result = citing_papers(
        paper=paper, engine_ids=engine_ids, max_results=limit, scope=scope,
        project_ids=project_ids, save=not serving_read_only(),
    )  # fmt: skip
    return CitingPage(
        paper_id=paper.pk,
        engines={name: EngineStatus.model_validate(s) for name, s in result.engines.items()},
        results=[EngineResult.model_validate(entry) for entry in result.results],
        saved=result.saved,
        notes=[*notes, *result.notes],
    )


@mcp_tool(
    name="find_related_papers",
    title="Related papers",
    description=(
        "Library papers related to a paper, scored 0-1 from shared keywords, citations "
        "and meaning, with reasons. engines: first fetches its citing papers from them."
    ),
    annotations=SEARCH_AND_KEEP,
    saves_results=True,
    aliases={"max_results": "limit"},
)
def find_related_papers(
    paper_id: PaperRef,
    limit: MaxResults = 10,
    similarity_threshold: Annotated[float, Field(ge=0.0, le=1.0)] = DEFAULT_THRESHOLD,
    engines: Engines = None,
    project_id: ProjectTag = None,
) -> RelatedPage:
    scope = current_scope()
    paper = paper_get(ref=paper_id, scope=scope)
    found = related_papers_fetching_citing(
        paper=paper, limit=limit, similarity_threshold=similarity_threshold,
        engines=engines, project_id=project_id, scope=scope, save=not serving_read_only(),
    )  # fmt: skip
    related = found.related
    return RelatedPage(
        paper=related.paper,
        results=related.results,
        weights=related.weights,
        similarity_threshold=related.similarity_threshold,
        engines={n: EngineStatus.model_validate(s) for n, s in found.engines.items()},
        notes=found.notes,
    )


@mcp_tool(
    name="analyze_paper_trends",
    title="Paper trends",
    description=(
        "Counts to chart over paper_ids, a project_id and/or a full-text query: authors, "
        "keywords, categories, venues, or timeline (papers per year)."
    ),
    annotations=READ_ONLY,
)
def analyze_paper_trends(
    analysis_type: Literal["authors", "keywords", "categories", "venues", "timeline"],
    paper_ids: Annotated[list[str | int] | None, Field(max_length=1000)] = None,
    project_id: Annotated[str | None, Field(max_length=200)] = None,
    query: Annotated[str | None, Field(max_length=settings.MAX_QUERY_CHARS)] = None,
    limit: Annotated[int, Field(ge=1, le=1000)] = 100,
) -> TrendsResult:
    result = papers_trends_by_ref(
        analysis_type=analysis_type, paper_ids=paper_ids, project_id=project_id,
        query=query, scope=current_scope(), limit=limit,
    )  # fmt: skip
    return TrendsResult.model_validate(result)


def register(registry: Registry) -> None:
    registry.add_tools(add_paper, get_citing_papers, find_related_papers, analyze_paper_trends)

"""Tool set `library`, part 2: tools that reach outside the library or analyse it (issue 5;
seed 004 tools 6, 10 and 11, and `add_paper`)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from engines.base import CITING
from engines.services import citing_papers, engine_ids_resolve, paper_add_by_identifier
from mcp_endpoint.registry import EXTERNAL_SEARCH, Registry
from mcp_endpoint.scope import current_scope
from mcp_endpoint.tools.engines_search import (
    EngineResult,
    Engines,
    MaxResults,
    ProjectTag,
    tag_projects,
)
from mcp_endpoint.tools.search import EngineStatus
from papers.selectors import paper_detail, paper_get

PaperRef = Annotated[
    str | int,
    Field(description="paper_id (integer), human id '[Vaswani, A., Shazeer, N. 2017]' or citekey."),
]


class AddedPaperResult(BaseModel):
    model_config = ConfigDict(extra="allow")

    created: bool = Field(description="false: the paper was already in the library.")
    paper: dict[str, Any] = Field(description="The full record, as get_paper_details.")
    engines: dict[str, EngineStatus] = Field(description="The engines asked and their status.")
    notes: list[str] = Field(default_factory=list)


class CitingPage(BaseModel):
    paper_id: int
    engines: dict[str, EngineStatus]
    results: list[EngineResult]
    saved: int
    notes: list[str] = Field(default_factory=list)


def register(registry: Registry) -> None:
    save = not registry.read_only

    @registry.tool(
        name="add_paper",
        title="Add a paper by DOI, arXiv id or URL",
        description=(
            "Add one paper to the library from a DOI ('10.18653/v1/N19-1423'), an arXiv id "
            "('1706.03762'), an OpenAlex work id ('W2963403868') or a doi.org / arxiv.org / "
            "openalex.org / semanticscholar.org URL. Metadata comes from every engine that "
            "knows the paper (Crossref, OpenAlex, Semantic Scholar, arXiv), merged into one "
            "paper; a paper already in the library is returned unchanged (created=false), "
            "never duplicated. project_id also adds it to a project. Costs a few API calls."
        ),
        annotations=EXTERNAL_SEARCH,
    )
    def add_paper(
        identifier: Annotated[
            str, Field(min_length=1, max_length=500, description="DOI, arXiv id or URL.")
        ],
        project_id: ProjectTag = None,
    ) -> AddedPaperResult:
        project_ids, notes = tag_projects(project_id, True)
        added = paper_add_by_identifier(identifier=identifier, project_ids=project_ids)
        return AddedPaperResult(
            created=added.created,
            paper=paper_detail(ref=added.paper.pk),
            engines={name: EngineStatus.model_validate(s) for name, s in added.engines.items()},
            notes=[*notes, *added.notes],
        )

    @registry.tool(
        name="get_citing_papers",
        title="Papers citing a paper",
        description=(
            "Papers that cite a paper: those in the library (engine 'local', from recorded "
            "citations) and those external engines know (Google Scholar via the paper's "
            "cites_id, OpenAlex and Semantic Scholar via its DOI/arXiv id). External citing "
            "papers are added to the library with the citation recorded, so the citation "
            "network grows as you explore. Engines without citation data say so in `engines`."
        ),
        annotations=EXTERNAL_SEARCH,
        saves_results=True,
    )
    def get_citing_papers(
        paper_id: PaperRef,
        max_results: MaxResults = 10,
        engines: Engines = None,
        project_id: ProjectTag = None,
    ) -> CitingPage:
        scope = current_scope()
        paper = paper_get(ref=paper_id, scope=scope)
        engine_ids = engine_ids_resolve(engines, operation=CITING)
        external = any(engine_id != "local" for engine_id in engine_ids)
        project_ids, notes = tag_projects(project_id, external)
        result = citing_papers(
            paper=paper, engine_ids=engine_ids, max_results=max_results, scope=scope,
            project_ids=project_ids, save=save,
        )  # fmt: skip
        return CitingPage(
            paper_id=paper.pk,
            engines={name: EngineStatus.model_validate(s) for name, s in result.engines.items()},
            results=[EngineResult.model_validate(entry) for entry in result.results],
            saved=result.saved,
            notes=[*notes, *result.notes],
        )

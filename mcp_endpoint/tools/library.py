"""Tool set `library`: papers, projects, keywords and exports (seed 004 tools 3, 4, 5, 7,
8, 13; resources `papers://{project_id}` and `paper://{paper_id}/metadata`).

Each tool parses its arguments (the schema enforces the limits), calls one selector or
service with the client's collection scope, and shapes the answer. Service errors are
mapped by `mcp_endpoint.registry`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from django.conf import settings
from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from mcp_endpoint.registry import READ_ONLY, Registry
from mcp_endpoint.scope import current_scope
from papers import selectors as paper_selectors
from papers import services as paper_services
from papers.bibtex import render_bibtex
from papers.exports import export_papers
from projects import selectors as project_selectors
from projects import services as project_services

MAX_REF_CHARS = paper_selectors.MAX_REF_LENGTH
MAX_PAPERS_PER_CALL = settings.MAX_PAGE_SIZE
RESOURCE_LIST_LIMIT = 100

PaperRefValue = (
    Annotated[int, Field(ge=1)] | Annotated[str, Field(min_length=1, max_length=MAX_REF_CHARS)]
)
PaperRef = Annotated[
    PaperRefValue,
    Field(
        description=(
            "The paper: its integer paper_id (e.g. 12), its human id "
            "(e.g. '[Vaswani, A., Shazeer, N. 2017]') or its citekey (e.g. 'vaswani2017attention')."
        )
    ),
]
ProjectRef = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="The project's id (a slug such as 'llm-evaluation') or its name.",
    ),
]
Keyword = Annotated[str, Field(min_length=1, max_length=100)]

WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
WRITE_IDEMPOTENT = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
KEYWORDS_WRITE = ToolAnnotations(
    # 'remove' and 'set' drop keywords, so clients should confirm; repeating a call is harmless.
    read_only_hint=False,
    destructive_hint=True,
    idempotent_hint=True,
    open_world_hint=False,
)


class PaperRecord(BaseModel):
    """A paper record; the selectors decide the full field list (extra fields allowed)."""

    model_config = ConfigDict(extra="allow")

    paper_id: int = Field(description="Integer id; the cheapest way to refer to the paper.")
    id: str = Field(description="Human-readable id, e.g. '[Vaswani, A., Shazeer, N. 2017]'.")
    citekey: str = Field(description="BibTeX citation key.")
    title: str
    year: int | None = None
    authors: list[str] = Field(default_factory=list)


class PaperMetadata(PaperRecord):
    """The compact record plus what get_paper_summary needs to know (seed 000)."""

    preferred_summary_template: str | None = Field(
        default=None,
        description="The template get_paper_summary returns when none is named; null if unset.",
    )
    available_summary_templates: list[str] = Field(
        default_factory=list,
        description="Templates this paper has a summary for (pass one to get_paper_summary).",
    )


class ProjectPapersPage(BaseModel):
    project_id: str
    project_name: str
    total: int = Field(description="How many papers the project holds.")
    limit: int
    offset: int
    next_offset: int | None = Field(
        description="Pass as offset to get the next page; null on the last page."
    )
    papers: list[PaperRecord]


class ProjectCreated(BaseModel):
    project_id: str = Field(description="The new project's id; use it as project_id elsewhere.")
    name: str
    description: str


class KeywordsUpdated(BaseModel):
    action: Literal["add", "remove", "set"]
    keywords_by_paper: dict[str, list[str]] = Field(
        description="paper_id (as text) -> the paper's keywords after the change."
    )


class BibtexEntry(BaseModel):
    paper_id: int
    citekey: str
    bibtex: str


class ExportDone(BaseModel):
    filename: str
    path: str = Field(description="Where the file is, relative to the knowledge-base directory.")
    format: str
    count: int = Field(description="How many papers were written.")


def _record(data: dict[str, Any]) -> PaperRecord:
    return PaperRecord.model_validate(data)


def _paper_metadata(ref: str | int) -> dict[str, Any]:
    return paper_selectors.paper_metadata(ref=ref, scope=current_scope())


def _project_papers_markdown(project_ref: str) -> str:
    project = project_selectors.project_get(ref=project_ref, scope=current_scope())
    papers, total = project_selectors.project_papers(
        project=project, limit=RESOURCE_LIST_LIMIT, offset=0
    )
    lines = [f"# {project.name}", ""]
    if project.description:
        lines += [project.description, ""]
    lines += [f"Project id: `{project.id}` - {total} paper(s).", ""]
    for paper in papers:
        brief = paper_selectors.paper_brief(paper)
        authors = ", ".join(brief["authors"][:6]) + (" et al." if len(brief["authors"]) > 6 else "")
        where = ", ".join(str(part) for part in (brief["venue"], brief["year"]) if part)
        lines.append(f"- **{brief['title']}** ({where or 'n.d.'})")
        lines.append(
            f"  {authors or 'Unknown authors'} - `{brief['id']}`, paper_id {brief['paper_id']}"
        )
        if brief["keywords"]:
            lines.append(f"  Keywords: {', '.join(brief['keywords'])}")
    if total > len(papers):
        lines += [
            "",
            f"... {total - len(papers)} more; call list_project_papers with offset "
            f"{len(papers)} to page through them.",
        ]
    return "\n".join(lines) + "\n"


def register(registry: Registry) -> None:
    @registry.tool(
        name="get_paper_details",
        title="Get paper details",
        description=(
            "Return the complete record of one paper in the library: title, authors with "
            "affiliations, year, venue, abstract, DOI/arXiv id, keywords, categories, projects, "
            "source URLs, citation count and source-specific metadata. Use it when you need "
            "the abstract or everything known about a paper; for a compact record use "
            "get_paper_metadata. Find paper ids first with list_project_papers or a search tool."
        ),
        annotations=READ_ONLY,
    )
    def get_paper_details(paper_id: PaperRef) -> PaperRecord:
        return _record(paper_selectors.paper_detail(ref=paper_id, scope=current_scope()))

    @registry.tool(
        name="get_paper_metadata",
        title="Get paper metadata",
        description=(
            "Return the structured bibliographic record of one paper (identifiers, title, "
            "authors, year, venue, DOI, keywords, categories, projects, counts) without the "
            "abstract or large free-text fields, plus preferred_summary_template and "
            "available_summary_templates (call it before get_paper_summary). Cheaper than "
            "get_paper_details; call it first when you only need to identify or cite a paper."
        ),
        annotations=READ_ONLY,
    )
    def get_paper_metadata(paper_id: PaperRef) -> PaperMetadata:
        return PaperMetadata.model_validate(_paper_metadata(paper_id))

    @registry.tool(
        name="list_project_papers",
        title="List a project's papers",
        description=(
            "List the papers of one research project, most recently added first, as short "
            "records (paper_id, human id, citekey, title, year, venue, authors, keywords). "
            "Pages with limit (at most 100) and offset (at most 10000); the answer says the "
            "total and the next offset. Accepts the project id or its name (see create_project)."
        ),
        annotations=READ_ONLY,
    )
    def list_project_papers(
        project_id: ProjectRef,
        limit: Annotated[
            int, Field(ge=1, le=settings.MAX_PAGE_SIZE, description="Page size, 1-100.")
        ] = 20,
        offset: Annotated[
            int,
            Field(ge=0, le=settings.MAX_OFFSET, description="Papers to skip, 0-10000."),
        ] = 0,
    ) -> ProjectPapersPage:
        project = project_selectors.project_get(ref=project_id, scope=current_scope())
        papers, total = project_selectors.project_papers(
            project=project, limit=limit, offset=offset
        )
        following = offset + len(papers)
        return ProjectPapersPage(
            project_id=project.id,
            project_name=project.name,
            total=total,
            limit=limit,
            offset=offset,
            next_offset=following if following < total else None,
            papers=[_record(paper_selectors.paper_brief(p)) for p in papers],
        )

    @registry.tool(
        name="create_project",
        title="Create a research project",
        description=(
            "Create a research project (a named collection of papers). Returns its project_id, "
            "a slug made from the name; the name works as a reference too. Names are unique "
            "regardless of case: creating an existing name returns a 'conflict' error naming "
            "it, so call list_project_papers with the name to check for an existing project."
        ),
        annotations=WRITE,
    )
    def create_project(
        name: Annotated[
            str, Field(min_length=1, max_length=200, description="The project's name.")
        ],
        description: Annotated[
            str, Field(max_length=5000, description="What the project is about.")
        ] = "",
    ) -> ProjectCreated:
        project = project_services.project_create(name=name, description=description)
        return ProjectCreated(
            project_id=project.id, name=project.name, description=project.description
        )

    @registry.tool(
        name="manage_paper_keywords",
        title="Add, remove or set paper keywords",
        description=(
            "Change the manually assigned keywords of one or several papers at once: "
            "action 'add' adds the keywords, 'remove' removes them, 'set' replaces all of a "
            "paper's keywords with the list (an empty list clears them). All or nothing: an "
            "unknown paper changes nothing. Returns each paper's keywords after the change. "
            "Keywords feed keyword search; read current ones with get_paper_metadata."
        ),
        annotations=KEYWORDS_WRITE,
    )
    def manage_paper_keywords(
        paper_ids: Annotated[
            PaperRefValue
            | Annotated[list[PaperRefValue], Field(min_length=1, max_length=MAX_PAPERS_PER_CALL)],
            Field(
                description=(
                    "One paper (paper_id, human id or citekey) or a list of up to 100 of them."
                )
            ),
        ],
        action: Annotated[
            Literal["add", "remove", "set"], Field(description="'add', 'remove' or 'set'.")
        ],
        keywords: Annotated[
            list[Keyword],
            Field(max_length=50, description="Keywords, each up to 100 characters."),
        ],
    ) -> KeywordsUpdated:
        refs = paper_ids if isinstance(paper_ids, list) else [paper_ids]
        updated = paper_services.paper_keywords_update(
            refs=refs, action=action, keywords=keywords, scope=current_scope()
        )
        return KeywordsUpdated(
            action=action,
            keywords_by_paper={str(pid): names for pid, names in updated.items()},
        )

    @registry.tool(
        name="export_paper_bibtex",
        title="Export a paper as BibTeX",
        description=(
            "Return the BibTeX entry of one paper, keyed by its citekey, ready to paste into a "
            "bibliography. For many papers at once, or a file, use export_search_results."
        ),
        annotations=READ_ONLY,
    )
    def export_paper_bibtex(paper_id: PaperRef) -> BibtexEntry:
        papers = list(paper_selectors.papers_filter(refs=[paper_id], scope=current_scope()))
        paper = papers[0]
        return BibtexEntry(paper_id=paper.pk, citekey=paper.citekey, bibtex=render_bibtex(papers))

    @registry.tool(
        name="export_search_results",
        title="Export papers to a file",
        description=(
            "Write papers to a file in the knowledge base's exports/ folder as BibTeX, CSV, "
            "JSON or Markdown, and return the file name, its path relative to the knowledge "
            "base and the number of papers written. Pass the paper_ids (e.g. from a search or "
            "list_project_papers); with project_id only papers of that project are exported. "
            "filename is optional (letters, digits, '-', '_' and '.'; no extension, no folders)."
        ),
        annotations=WRITE_IDEMPOTENT,
    )
    def export_search_results(
        paper_ids: Annotated[
            list[PaperRefValue],
            Field(
                min_length=1,
                max_length=MAX_PAPERS_PER_CALL,
                description="Up to 100 papers (paper_id, human id or citekey).",
            ),
        ],
        format: Annotated[
            Literal["bibtex", "csv", "json", "jsonl", "markdown", "ris"],
            Field(description="The file format (ris: EndNote, Zotero, Mendeley)."),
        ],
        project_id: Annotated[
            str | None,
            Field(
                max_length=200,
                description="Only export the listed papers that are in this project.",
            ),
        ] = None,
        filename: Annotated[
            str | None,
            Field(
                max_length=100,
                description="File name without extension; a dated default when omitted.",
            ),
        ] = None,
    ) -> ExportDone:
        papers = list(
            paper_selectors.papers_filter(
                refs=paper_ids, project=project_id or None, scope=current_scope()
            )
        )
        result = export_papers(papers=papers, fmt=format, filename=filename)
        path = result.path
        try:
            shown = path.relative_to(settings.RESEARCH_DIRECTORY)
        except ValueError:
            shown = path
        return ExportDone(
            filename=result.filename, path=str(shown), format=result.format, count=result.count
        )

    @registry.resource(
        "papers://{project_id}",
        name="project_papers",
        title="Papers of a project",
        description=(
            "Markdown list of a research project's papers (first 100; page with "
            "list_project_papers)."
        ),
        mime_type="text/markdown",
    )
    def project_papers_resource(project_id: str) -> str:
        return _project_papers_markdown(project_id)

    @registry.resource(
        "paper://{paper_id}/metadata",
        name="paper_metadata",
        title="Paper metadata",
        description="The structured record of one paper as JSON (as get_paper_metadata).",
        mime_type="application/json",
    )
    def paper_metadata_resource(paper_id: str) -> str:
        return json.dumps(_paper_metadata(paper_id), ensure_ascii=False, default=str)

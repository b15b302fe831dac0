"""`manage.py rederive_highlight_text` on the real ACL fixture PDFs: highlights stored
before the line-end hyphen rule ("litera- ture") get the text a highlight made today stores,
found again at their boxes; a dry run lists the changes and writes nothing; --apply changes
the text only; a project limits the run to its papers; a highlight made on a PDF since
replaced, or no longer found at its boxes, is left as it is."""

from __future__ import annotations

from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from papers.models import Annotation, Paper, PaperPdf
from papers.pdf import services
from projects.models import Project
from projects.services import project_add_papers
from tests.papers.pdf.builders import FIXTURES

LITERATURE_GRAPH = FIXTURES / "N18-3011.pdf"
SPECTER = FIXTURES / "2020.acl-main.207.pdf"
# (page, what a reader selected across a line break, the text stored today, the text
# stored before the rule: the selection with its whitespace folded)
GRAPH_HIGHLIGHTS = [
    (1, "published scientific litera-\nture into", "published scientific literature into"),
    (2, "a directed author-\nship edge", "a directed authorship edge"),
    (2, "(e.g., DBLP, MED-\nLINE), pre-publishing", "(e.g., DBLP, MED-LINE), pre-publishing"),
]
SPECTER_HIGHLIGHT = (1, "a critical ingre-\ndient for", "a critical ingredient for")


@pytest.fixture(autouse=True)
def knowledge_base(settings: Any, tmp_path: Path) -> Path:
    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.ASSETS_DIR = tmp_path / "assets"
    settings.CELERY_TASK_ALWAYS_EAGER = True
    return tmp_path


def old_style(paper: Paper, page: int, selected: str) -> Annotation:
    """A highlight as the reading page stored it before the rule: its boxes found as
    today, its text the selection with the line break turned into a space."""
    annotation = services.annotation_highlight_create(paper=paper, page=page, text=selected)
    Annotation.objects.filter(pk=annotation.pk).update(text=" ".join(selected.split()))
    annotation.refresh_from_db()
    return annotation


@pytest.fixture
def library(make_paper: Callable[..., Paper]) -> dict[str, Any]:
    graph = make_paper(title="Construction of the Literature Graph in Semantic Scholar")
    specter = make_paper(title="SPECTER: Document-level Representation Learning")
    services.pdf_attach_file(paper_id=graph.pk, path=LITERATURE_GRAPH)
    services.pdf_attach_file(paper_id=specter.pk, path=SPECTER)
    return {
        "graph": graph,
        "specter": specter,
        "graph_highlights": [old_style(graph, p, s) for p, s, _ in GRAPH_HIGHLIGHTS],
        "specter_highlight": old_style(specter, *SPECTER_HIGHLIGHT[:2]),
    }


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("rederive_highlight_text", *args, "--no-progress", stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def snapshot() -> dict[int, tuple[Any, ...]]:
    return {
        a.pk: (a.text, a.rects, a.color, a.comment, a.page, a.updated_at)
        for a in Annotation.objects.all()
    }


def test_a_dry_run_lists_the_changes_and_writes_nothing(library: dict[str, Any]) -> None:
    before = snapshot()
    out, _ = run()
    assert Annotation.objects.filter(text="published scientific litera- ture into").exists()
    assert snapshot() == before
    first = library["graph_highlights"][0]
    assert (
        f"highlight {first.pk} (paper {library['graph'].pk}, page 1): "
        "'published scientific litera- ture into' -> 'published scientific literature into'"
    ) in out
    assert "'a critical ingre- dient for' -> 'a critical ingredient for'" in out
    assert out.strip().endswith(
        "4 highlights checked: 4 would change (a dry run: --apply writes them), 0 already right"
    )


def test_apply_changes_the_text_only(library: dict[str, Any]) -> None:
    before = snapshot()
    out, _ = run("--apply")
    assert "4 highlights checked: 4 changed, 0 already right" in out
    after = snapshot()
    stored = {a.pk: a.text for a in Annotation.objects.all()}
    graph = library["graph_highlights"]
    assert [stored[a.pk] for a in graph] == [today for _, _, today in GRAPH_HIGHLIGHTS]
    assert stored[library["specter_highlight"].pk] == SPECTER_HIGHLIGHT[2]
    # The same text a highlight made today at the same place stores.
    fresh = services.annotation_highlight_create(
        paper=library["graph"], page=1, text="published scientific litera-\nture into"
    )
    assert fresh.text == stored[graph[0].pk]
    for pk, row in before.items():
        assert after[pk][1:] == row[1:]  # boxes, colour, comment, page, dates as they were
    # Nothing is left to change.
    again, _ = run()
    assert "5 highlights checked: 0 would change" in again
    assert again.strip().endswith("5 already right")


def test_a_project_limits_the_run_to_its_papers(library: dict[str, Any]) -> None:
    project = Project.objects.create(id="specter-reading", name="SPECTER reading")
    project_add_papers(project=project.pk, paper_ids=[library["specter"].pk])
    out, _ = run("--apply", "--project", "SPECTER reading")
    assert "1 highlights checked: 1 changed" in out
    assert Annotation.objects.get(pk=library["specter_highlight"].pk).text == SPECTER_HIGHLIGHT[2]
    untouched = library["graph_highlights"][0]
    assert Annotation.objects.get(pk=untouched.pk).text == "published scientific litera- ture into"
    with pytest.raises(CommandError, match="No project 'nothing like it'"):
        run("--project", "nothing like it")


def test_highlights_of_a_replaced_pdf_or_not_at_their_boxes_are_left(
    library: dict[str, Any],
) -> None:
    first, second, _ = library["graph_highlights"]
    # Made on another file than the paper's PDF now: its boxes are that file's.
    Annotation.objects.filter(pk=first.pk).update(pdf_sha256="0" * 64)
    # Boxes that hold other words than the text (moved to page 1's top-left corner).
    Annotation.objects.filter(pk=second.pk).update(rects=[[60.0, 700.0, 200.0, 712.0]])
    out, _ = run("--apply", "--paper", str(library["graph"].pk))
    assert (
        "3 highlights checked: 1 changed, 0 already right, 1 not found at their boxes, left "
        "as they are, 1 made on a PDF since replaced, left as they are"
    ) in out
    assert Annotation.objects.get(pk=first.pk).text == "published scientific litera- ture into"
    assert Annotation.objects.get(pk=second.pk).text == "a directed author- ship edge"


def test_a_paper_whose_pdf_is_gone_is_reported(library: dict[str, Any]) -> None:
    PaperPdf.objects.filter(paper=library["specter"]).delete()
    out, err = run("--apply")
    assert f"paper {library['specter'].pk}: no PDF (1 highlights left)" in err
    assert "4 highlights checked: 3 changed" in out

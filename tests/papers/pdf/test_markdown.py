"""A paper's PDF as its source markdown, made on attach (after commit) and on demand, and
the management commands attach_pdf, pdf_to_markdown and export_annotations."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from papers import assets
from papers.models import Paper, PaperPdf
from papers.pdf import services
from papers.pdf.markdown import document_markdown
from tests.papers.pdf.builders import EXPOSITORY, FACTS, PAPERMAGE, QUANTUM


@pytest.fixture(autouse=True)
def knowledge_base(settings: Any, tmp_path: Path) -> Path:
    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.ASSETS_DIR = tmp_path / "assets"
    # These folders are this process's own, so tasks run here even where CI has a worker
    # (test_pdf_worker.py covers the worker).
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EXPORTS_DIR = tmp_path / "exports"
    return tmp_path


def markdown_of(path: Path) -> str:
    with pymupdf.open(path) as document:
        return document_markdown(document)


def headings(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("#")]


def test_headings_come_from_the_outline() -> None:
    assert headings(markdown_of(EXPOSITORY)) == [
        "# Beyond Summarization: Designing AI Support for Real-World Expository Writing Tasks",
        "## ABSTRACT",
        "## 1 INTRODUCTION",
        "## 2 CHARACTERIZING EXPOSITORY WRITING",
        "## 3 DESIGNING AI SUPPORTS FOR EXPOSITORY WRITING",
        "## 4 CONCLUSION",
        "## REFERENCES",
    ]


def test_nested_outline_levels_become_heading_levels() -> None:
    found = headings(markdown_of(QUANTUM))
    title = "Quantum Criticality for Extended Nodes on a Bethe Lattice in the Large Connectivity"
    assert found[0] == f"# {title} Limit"  # the outline's single root, over two lines
    assert "## II. SELF-CONSISTENT ACTION IN THE LARGE z LIMIT" in found
    assert (
        found.index("### A. Ordered Phase")
        == found.index("## II. SELF-CONSISTENT ACTION IN THE LARGE z LIMIT") + 1
    )


def test_without_outline_headings_come_from_typography() -> None:
    found = headings(markdown_of(PAPERMAGE))
    assert found[0].startswith("# PaperMage: A Unified Toolkit for Processing")
    assert found[0].endswith("Manipulating Visually-Rich Scientific Documents")
    expected = ["## Abstract", "## 1 Introduction", "## 2 Related Work",
                "### 2.1 Turn-key software for scientific documents", "## References"]  # fmt: skip
    assert all(heading in found for heading in expected), found
    assert not any("Kyle Lo" in heading for heading in found)  # bold author names are not


def test_pages_are_marked_in_order_and_two_columns_are_read_left_first() -> None:
    markdown = markdown_of(QUANTUM)
    markers = re.findall(r"<!-- page (\d+) -->", markdown)
    assert markers == [str(n) for n in range(1, FACTS["1111.2011v2.pdf"]["pages"] + 1)]
    page_one = markdown.split("<!-- page 2 -->")[0]
    # Left column (introduction) ends '... made more readily.' before the right column
    # starts 'Since its introduction in 1935'.
    assert page_one.index("It is often the case") < page_one.index("Since its introduction in 1935")
    assert "arXiv:1111.2011v2" not in markdown  # the vertical stamp is left out


def test_words_split_at_line_ends_are_joined_and_ligatures_expanded() -> None:
    markdown = markdown_of(EXPOSITORY)
    assert "leveraging this new technology can transform writing" in markdown
    assert "ﬁ" not in markdown and "ﬀ" not in markdown


def test_attach_makes_the_source_markdown_after_commit(
    make_paper: Callable[..., Paper], django_capture_on_commit_callbacks: Any
) -> None:
    paper = make_paper()
    with django_capture_on_commit_callbacks(execute=True):
        record = services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    source = assets.source_get(paper=paper).text
    assert source.startswith(services.CONVERTED_MARKER)
    assert f"sha256 {record.sha256[:12]}, 4 pages" in source.splitlines()[0]
    assert "<!-- page 4 -->" in source and "## 1 INTRODUCTION" in source


def test_attach_keeps_a_source_imported_by_hand_and_the_command_replaces_it(
    make_paper: Callable[..., Paper], django_capture_on_commit_callbacks: Any
) -> None:
    paper = make_paper()
    assets.asset_save(paper=paper, kind=assets.Kind.SOURCE, content="# Curated\n\nBy hand.\n")
    with django_capture_on_commit_callbacks(execute=True):
        services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    assert assets.source_get(paper=paper).text == "# Curated\n\nBy hand.\n"
    out = StringIO()
    call_command("pdf_to_markdown", "--all", "--keep-imported", stdout=out)
    assert out.getvalue().strip() == "Converted 0, kept 1 imported, 0 failed."
    call_command("pdf_to_markdown", paper.citekey, stdout=out)
    assert assets.source_get(paper=paper).text.startswith(services.CONVERTED_MARKER)


def test_pdf_to_markdown_reports_papers_without_pdf(make_paper: Callable[..., Paper]) -> None:
    paper = make_paper()
    err = StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("pdf_to_markdown", str(paper.pk), stdout=StringIO(), stderr=err)
    assert raised.value.returncode == 1
    assert f"paper {paper.pk}: Paper {paper.pk} has no PDF" in err.getvalue()


# --- attach_pdf --------------------------------------------------------------------------


def test_attach_pdf_command_attaches_then_reports_no_change(
    make_paper: Callable[..., Paper], django_capture_on_commit_callbacks: Any
) -> None:
    paper = make_paper()
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("attach_pdf", paper.citekey, str(EXPOSITORY), stdout=out)
    record = PaperPdf.objects.get(paper=paper)
    assert out.getvalue().startswith(f"Attached to paper {paper.pk}: {record.file_name} (4 pages")
    call_command("attach_pdf", str(paper.pk), str(EXPOSITORY), stdout=out)
    assert "already has this PDF; nothing changed." in out.getvalue()
    assert assets.source_get(paper=paper).text.startswith(services.CONVERTED_MARKER)


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        (["{paper}"], 2),
        (["{paper}", "{pdf}", "--download"], 2),
        (["{paper}", "{pdf}", "--url", "https://example.org/x.pdf"], 2),
        (["nosuchpaper", "{pdf}"], 2),
        (["{paper}", "{fake}"], 1),
        (["{paper}", "--download"], 2),  # the paper has no pdf_url
    ],
)
def test_attach_pdf_command_errors(
    make_paper: Callable[..., Paper], tmp_path: Path, arguments: list[str], code: int
) -> None:
    paper = make_paper()
    fake = tmp_path / "fake.pdf"
    fake.write_text("not a pdf")
    values = {"paper": str(paper.pk), "pdf": str(EXPOSITORY), "fake": str(fake)}
    with pytest.raises(CommandError) as raised:
        call_command("attach_pdf", *[a.format(**values) for a in arguments], stdout=StringIO())
    assert raised.value.returncode == code


# --- export_annotations ------------------------------------------------------------------


def test_export_annotations_command_in_every_format(
    make_paper: Callable[..., Paper], knowledge_base: Path
) -> None:
    paper = make_paper()
    record = services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    services.annotation_highlight_create(
        paper=paper, page=1, text="The advent of large language models", comment="LLMs"
    )
    out = StringIO()
    call_command("export_annotations", str(paper.pk), stdout=out)
    assert json.loads(out.getvalue())["annotations"][0]["comment"] == "LLMs"
    target = knowledge_base / "notes.md"
    call_command("export_annotations", paper.citekey, "--format", "markdown", "-o", str(target),
                 stdout=StringIO())  # fmt: skip
    assert "> The advent of large language models" in target.read_text()
    out = StringIO()
    call_command("export_annotations", str(paper.pk), "--format", "pdf", stdout=out)
    written = Path(out.getvalue().removeprefix("Wrote ").strip())
    assert written.parent == knowledge_base / "exports"
    assert written.name == record.file_name.removesuffix(".pdf") + ".annotations.pdf"
    with pymupdf.open(written) as document:
        assert [a.info["content"] for a in document[0].annots()] == ["LLMs"]


def test_export_annotated_pdf_of_a_paper_without_pdf_fails(
    make_paper: Callable[..., Paper],
) -> None:
    with pytest.raises(CommandError) as raised:
        call_command("export_annotations", str(make_paper().pk), "--format", "pdf")
    assert raised.value.returncode == 1

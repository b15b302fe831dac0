"""PDFs in the library: attaching files, outlines, reading pages and sections, and the
errors of seed 003, on the real fixture PDFs (tests/fixtures/pdfs, facts in
pdf_facts.json)."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.errors import InvalidInput, NotFound
from papers.models import Paper, PaperPdf
from papers.pdf import selectors, services
from papers.pdf.errors import NotAPdf, PdfFileMissing, PdfNotAvailable
from tests.papers.pdf.builders import EXPOSITORY, FACTS, FIXTURES, PAPERMAGE, QUANTUM


@pytest.fixture(autouse=True)
def knowledge_base(settings: Any, tmp_path: Path) -> Path:
    """Each test gets its own downloads/ and assets/ folders."""
    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.ASSETS_DIR = tmp_path / "assets"
    # These folders are this process's own, so tasks run here even where CI has a worker
    # (test_pdf_worker.py covers the worker).
    settings.CELERY_TASK_ALWAYS_EAGER = True
    return tmp_path


@pytest.fixture
def paper_with_pdf(make_paper: Callable[..., Paper]) -> Callable[[Path], Paper]:
    def make(path: Path) -> Paper:
        paper = make_paper(title=f"Paper {path.stem}", arxiv_id=path.stem.removesuffix("v1"))
        services.pdf_attach_file(paper_id=paper.pk, path=path)
        return paper

    return make


def downloads(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "downloads").iterdir())


# --- attaching ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["1111.2011v2.pdf", "2304.02623v1.pdf", "papermage.pdf"])
def test_attach_records_hash_size_and_pages(
    make_paper: Callable[..., Paper], knowledge_base: Path, name: str
) -> None:
    paper = make_paper(title="Some paper", citekey=None)
    record = services.pdf_attach_file(paper_id=paper.pk, path=FIXTURES / name)
    facts = FACTS[name]
    assert (record.sha256, record.size, record.page_count) == (
        facts["sha256"],
        facts["bytes"],
        facts["pages"],
    )
    assert record.origin == "attached" and record.original_name == name
    stored = knowledge_base / "downloads" / record.file_name
    assert hashlib.sha256(stored.read_bytes()).hexdigest() == facts["sha256"]
    assert downloads(knowledge_base) == [record.file_name]  # no staging files left


def test_file_name_is_made_from_paper_id_and_a_safe_citekey(
    make_paper: Callable[..., Paper],
) -> None:
    paper = make_paper(title="Some paper")
    Paper.objects.filter(pk=paper.pk).update(citekey="../../etc/Ödön:x y")
    record = services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    assert record.file_name == f"{paper.pk}-etc-Odon-x-y.pdf"


def test_attaching_the_same_file_again_changes_nothing(
    make_paper: Callable[..., Paper], knowledge_base: Path
) -> None:
    paper = make_paper()
    first = services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    copy = knowledge_base / "elsewhere.pdf"
    shutil.copyfile(EXPOSITORY, copy)
    again = services.pdf_attach_file(paper_id=paper.pk, path=copy)
    assert again.pk == first.pk and again.updated_at == first.updated_at
    assert again.original_name == "2304.02623v1.pdf"
    assert PaperPdf.objects.count() == 1 and downloads(knowledge_base) == [first.file_name]


def test_attaching_another_file_replaces_the_pdf_under_the_same_name(
    make_paper: Callable[..., Paper], knowledge_base: Path
) -> None:
    paper = make_paper()
    first = services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    second = services.pdf_attach_file(paper_id=paper.pk, path=QUANTUM)
    assert second.pk == first.pk and second.file_name == first.file_name
    assert (second.page_count, second.sha256) == (8, FACTS["1111.2011v2.pdf"]["sha256"])
    assert downloads(knowledge_base) == [first.file_name]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"<html><body>Please log in</body></html>", "not_pdf"),
        (b"%PDF-1.7\n" + b"\x00garbage" * 200, "unreadable"),
    ],
)
def test_files_that_are_not_readable_pdfs_are_refused_and_leave_nothing(
    make_paper: Callable[..., Paper], knowledge_base: Path, content: bytes, reason: str
) -> None:
    paper = make_paper()
    path = knowledge_base / "fake.pdf"
    path.write_bytes(content)
    with pytest.raises(NotAPdf) as raised:
        services.pdf_attach_file(paper_id=paper.pk, path=path)
    assert raised.value.details["reason"] == reason
    assert not PaperPdf.objects.exists() and downloads(knowledge_base) == []


def test_files_over_the_size_limit_are_refused(
    make_paper: Callable[..., Paper], knowledge_base: Path, settings: Any
) -> None:
    settings.PDF_MAX_BYTES = 100_000
    paper = make_paper()
    with pytest.raises(NotAPdf) as raised:
        services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    assert raised.value.details == {"reason": "too_large", "max_bytes": 100_000}
    assert downloads(knowledge_base) == []


def test_password_protected_pdfs_are_refused(
    make_paper: Callable[..., Paper], knowledge_base: Path
) -> None:
    import pymupdf

    locked = knowledge_base / "locked.pdf"
    with pymupdf.open(EXPOSITORY) as document:
        document.save(
            locked, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="owner"
        )
    with pytest.raises(NotAPdf) as raised:
        services.pdf_attach_file(paper_id=make_paper().pk, path=locked)
    assert raised.value.details["reason"] == "encrypted"


def test_attaching_to_an_unknown_paper_or_a_missing_file_fails(
    make_paper: Callable[..., Paper], knowledge_base: Path
) -> None:
    with pytest.raises(NotFound):
        services.pdf_attach_file(paper_id=987654, path=EXPOSITORY)
    with pytest.raises(InvalidInput):
        services.pdf_attach_file(paper_id=make_paper().pk, path=knowledge_base / "none.pdf")
    assert downloads(knowledge_base) == []


# --- outline -----------------------------------------------------------------------------


def flatten(items: list[dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for item in items:
        rows.append([item["level"], item["title"], item["page"]])
        rows += flatten(item["children"])
    return rows


@pytest.mark.parametrize("name", ["1111.2011v2.pdf", "2304.02623v1.pdf"])
def test_outline_equals_the_pdf_facts(paper_with_pdf: Callable[[Path], Paper], name: str) -> None:
    outline = selectors.pdf_outline_get(paper=paper_with_pdf(FIXTURES / name))
    expected = [[level, " ".join(title.split()), page] for level, title, page in FACTS[name]["toc"]]
    assert outline.has_outline is True and outline.hint is None
    assert outline.total_pages == FACTS[name]["pages"]
    assert flatten(outline.items) == expected


def test_outline_nests_children_under_their_section(
    paper_with_pdf: Callable[[Path], Paper],
) -> None:
    outline = selectors.pdf_outline_get(paper=paper_with_pdf(QUANTUM))
    [root] = outline.items
    section_two = root["children"][2]
    assert section_two["title"] == "II Self-consistent action in the large z limit"
    assert [child["title"] for child in section_two["children"]] == [
        "A Ordered Phase",
        "B Disordered phase",
    ]
    assert [child["page"] for child in section_two["children"]] == [4, 4]


def test_pdf_without_outline_says_so_and_points_to_pages(
    paper_with_pdf: Callable[[Path], Paper],
) -> None:
    outline = selectors.pdf_outline_get(paper=paper_with_pdf(PAPERMAGE))
    assert (outline.has_outline, outline.items, outline.total_pages) == (False, [], 13)
    assert outline.hint and "pages=" in outline.hint


# --- reading pages -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "pages"),
    [
        ("1", [1]),
        ("1-5", [1, 2, 3, 4, 5]),
        ("1,3,5-7", [1, 3, 5, 6, 7]),
        ("all", list(range(1, 9))),
    ],
)
def test_page_specs_select_pages(
    paper_with_pdf: Callable[[Path], Paper], spec: str, pages: list[int]
) -> None:
    text = selectors.pdf_pages_read(paper=paper_with_pdf(QUANTUM), pages=spec)
    assert text.page_numbers == pages
    rendered = text.render()
    assert [line for line in rendered.splitlines() if line.startswith("--- Page ")] == [
        f"--- Page {n} of 8 ---" for n in pages
    ]


def test_page_text_is_the_page_with_ligatures_expanded(
    paper_with_pdf: Callable[[Path], Paper],
) -> None:
    text = selectors.pdf_pages_read(paper=paper_with_pdf(QUANTUM), pages="1").render()
    assert FACTS["1111.2011v2.pdf"]["first_page_text_head"][:60] in text
    assert "due to the different natures" in text and "ﬀ" not in text


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("9", "Page 9 is out of range: the PDF has 8 page(s) (1-8)."),
        ("2-12", "Page 12 is out of range: the PDF has 8 page(s) (1-8)."),
        ("0", "is not a valid range"),
        ("5-3", "is not a valid range"),
        ("one", "is not a page or a range"),
        ("1;2", "is not a page or a range"),
    ],
)
def test_bad_page_specs_are_invalid_input(
    paper_with_pdf: Callable[[Path], Paper], spec: str, message: str
) -> None:
    paper = paper_with_pdf(QUANTUM)
    with pytest.raises(InvalidInput) as raised:
        selectors.pdf_pages_read(paper=paper, pages=spec)
    assert message in raised.value.message


def test_out_of_range_error_carries_the_page_count(
    paper_with_pdf: Callable[[Path], Paper],
) -> None:
    with pytest.raises(InvalidInput) as raised:
        selectors.pdf_pages_read(paper=paper_with_pdf(EXPOSITORY), pages="5")
    assert raised.value.details["total_pages"] == 4


@pytest.mark.parametrize(("pages", "section"), [(None, None), ("1", "Introduction"), ("", " ")])
def test_pages_or_section_exactly_one(
    paper_with_pdf: Callable[[Path], Paper], pages: str | None, section: str | None
) -> None:
    with pytest.raises(InvalidInput, match="either pages"):
        selectors.pdf_pages_read(paper=paper_with_pdf(EXPOSITORY), pages=pages, section=section)


# --- reading sections --------------------------------------------------------------------


def test_section_is_read_through_the_outline(paper_with_pdf: Callable[[Path], Paper]) -> None:
    text = selectors.pdf_pages_read(paper=paper_with_pdf(EXPOSITORY), section="Introduction")
    [part] = text.parts
    assert part.section is not None
    assert (part.section.title, part.section.pages) == ("1 Introduction", [1, 2])
    rendered = text.render()
    assert rendered.startswith("=== Section: 1 Introduction (pages 1-2) ===\n--- Page 1 of 4 ---\n")
    assert "--- Page 2 of 4 ---" in rendered and "--- Page 3 of 4 ---" not in rendered
    assert "The advent of large language models" in rendered


def test_several_sections_are_each_delimited(paper_with_pdf: Callable[[Path], Paper]) -> None:
    text = selectors.pdf_pages_read(
        paper=paper_with_pdf(EXPOSITORY), section="introduction, 4 CONCLUSION,References"
    )
    headers = [line for line in text.render().splitlines() if line.startswith("=== ")]
    assert headers == [
        "=== Section: 1 Introduction (pages 1-2) ===",
        "=== Section: 4 Conclusion (page 3) ===",
        "=== Section: References (pages 3-4) ===",
    ]
    assert text.page_numbers == [1, 2, 3, 4]


def test_unknown_section_lists_the_available_ones(
    paper_with_pdf: Callable[[Path], Paper],
) -> None:
    with pytest.raises(NotFound) as raised:
        selectors.pdf_pages_read(paper=paper_with_pdf(EXPOSITORY), section="Methods")
    assert raised.value.message == "Section 'Methods' is not in the outline."
    assert raised.value.details["available_sections"] == [
        "Abstract",
        "1 Introduction",
        "2 Characterizing Expository Writing",
        "3 Designing AI Supports for Expository Writing",
        "4 Conclusion",
        "References",
    ]


def test_section_of_a_pdf_without_outline_suggests_pages(
    paper_with_pdf: Callable[[Path], Paper],
) -> None:
    with pytest.raises(InvalidInput) as raised:
        selectors.pdf_pages_read(paper=paper_with_pdf(PAPERMAGE), section="Introduction")
    assert "no outline" in raised.value.message and "pages=" in raised.value.message
    assert raised.value.details["has_outline"] is False
    assert raised.value.details["total_pages"] == 13


# --- missing PDFs ------------------------------------------------------------------------


def test_paper_without_pdf_says_how_to_attach_one(make_paper: Callable[..., Paper]) -> None:
    paper = make_paper()
    for read in (
        lambda: selectors.pdf_outline_get(paper=paper),
        lambda: selectors.pdf_pages_read(paper=paper, pages="1"),
    ):
        with pytest.raises(PdfNotAvailable) as raised:
            read()
        assert raised.value.code == "pdf_not_available"
        assert f"manage.py attach_pdf {paper.pk} FILE" in raised.value.message
        assert "--download" in raised.value.message


def test_missing_file_is_reported_without_its_path(
    paper_with_pdf: Callable[[Path], Paper], knowledge_base: Path
) -> None:
    paper = paper_with_pdf(EXPOSITORY)
    (knowledge_base / "downloads" / paper.pdf.file_name).unlink()
    with pytest.raises(PdfFileMissing) as raised:
        selectors.pdf_pages_read(paper=paper, pages="1")
    assert raised.value.code == "pdf_file_missing"
    assert str(knowledge_base) not in raised.value.message
    assert "missing" in raised.value.message

"""Highlights and area annotations on the library's PDFs: found tolerant of line breaks,
hyphenation and ligatures, stored in PDF points (origin bottom-left, as Zotero) and drawn
as real PDF annotations into an annotated copy that PyMuPDF re-opens here."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from core.errors import InvalidInput, NotFound
from papers.models import Annotation, Paper
from papers.pdf import selectors, services
from papers.pdf.annotate import annotation_pdf_name
from papers.pdf.errors import PdfNotAvailable, TextNotFound
from tests.papers.pdf.builders import EXPOSITORY, FACTS, QUANTUM, WRAPPED

GREEN = (0x5F / 255, 0xB2 / 255, 0x36 / 255)
ORANGE = (0xF1 / 255, 0x98 / 255, 0x37 / 255)


@pytest.fixture(autouse=True)
def knowledge_base(settings: Any, tmp_path: Path) -> Path:
    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.ASSETS_DIR = tmp_path / "assets"
    # These folders are this process's own, so tasks run here even where CI has a worker
    # (test_pdf_worker.py covers the worker).
    settings.CELERY_TASK_ALWAYS_EAGER = True
    return tmp_path


@pytest.fixture
def attach(make_paper: Callable[..., Paper]) -> Callable[[Path], Paper]:
    def make(path: Path) -> Paper:
        paper = make_paper(title=f"Paper {path.stem}", arxiv_id=path.stem.removesuffix("v1"))
        services.pdf_attach_file(paper_id=paper.pk, path=path)
        paper.refresh_from_db()
        return paper

    return make


def annotated(paper: Paper, knowledge_base: Path) -> pymupdf.Document:
    paper.pdf.refresh_from_db()
    assert paper.pdf.annotated_file_name
    return pymupdf.open(knowledge_base / "downloads" / paper.pdf.annotated_file_name)


def close_to(a: tuple[float, ...], b: tuple[float, ...], tolerance: float = 0.01) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= tolerance for x, y in zip(a, b, strict=True))


def test_highlight_across_a_line_break_is_a_real_pdf_highlight(
    attach: Callable[[Path], Paper], knowledge_base: Path
) -> None:
    paper = attach(EXPOSITORY)
    annotation = services.annotation_highlight_create(
        paper=paper, page=1, text=WRAPPED, color="positive", comment="Key claim"
    )
    assert (annotation.kind, annotation.page, annotation.color) == ("highlight", 1, "#5fb236")
    assert annotation.text == WRAPPED  # 'tech-' + 'nology' stored as 'technology'
    assert len(annotation.rects) == 3  # one per line
    assert annotation.pdf_sha256 == FACTS["2304.02623v1.pdf"]["sha256"]

    with annotated(paper, knowledge_base) as document:
        page = document[0]
        [drawn] = list(page.annots())
        assert drawn.type[1] == "Highlight"
        assert close_to(drawn.colors["stroke"], GREEN)
        assert drawn.info["content"] == "Key claim"
        assert drawn.info["id"] == annotation_pdf_name(annotation.pk)
        # Each stored rect (PDF space, bottom-left origin) is where the words are drawn.
        for rect, line in zip(
            annotation.rects, ("Recent work", "nology can", "during"), strict=True
        ):
            box = pymupdf.Rect(rect) * page.transformation_matrix
            assert drawn.rect.contains(box) or drawn.rect.intersects(box)
            assert line in page.get_textbox(box)
        covered = " ".join(
            page.get_textbox(pymupdf.Rect(r) * page.transformation_matrix) for r in annotation.rects
        )
        assert "leveraging this new tech" in covered and "summarization." in covered
        # PDF space: y grows upwards, so the first line has the largest y.
        assert annotation.rects[0][1] > annotation.rects[1][1] > annotation.rects[2][1]
        assert all(0 <= r[0] < r[2] <= 612 and 0 <= r[1] < r[3] <= 792 for r in annotation.rects)


def test_the_original_pdf_is_never_modified(
    attach: Callable[[Path], Paper], knowledge_base: Path
) -> None:
    paper = attach(EXPOSITORY)
    services.annotation_highlight_create(paper=paper, page=1, text=WRAPPED)
    services.annotation_area_create(paper=paper, page=2, rect=[50, 50, 300, 300])
    original = (knowledge_base / "downloads" / paper.pdf.file_name).read_bytes()
    assert hashlib.sha256(original).hexdigest() == FACTS["2304.02623v1.pdf"]["sha256"]
    with pymupdf.open(stream=original) as document:
        assert all(not list(page.annots()) for page in document)


def test_ligatures_quotes_and_case_do_not_matter(attach: Callable[[Path], Paper]) -> None:
    paper = attach(QUANTUM)  # the PDF has 'diﬀerent' (one ligature glyph) on page 1
    annotation = services.annotation_highlight_create(
        paper=paper, page=1, text="due to the DIFFERENT natures of interactions along different"
    )
    assert annotation.text == "due to the different natures of interactions along different"
    quoted = services.annotation_highlight_create(
        paper=paper, page=1, text='an analytical study of d-dimensional "nodes" arranged as'
    )
    assert "“nodes”" in quoted.text


def test_highlights_keep_each_colour_name_and_default_to_yellow(
    attach: Callable[[Path], Paper],
) -> None:
    paper = attach(EXPOSITORY)
    sentences = ["The advent of large language models", "Large language models have introduced"]
    made = [
        services.annotation_highlight_create(paper=paper, page=1, text=sentences[0], color="code"),
        services.annotation_highlight_create(paper=paper, page=1, text=sentences[1]),
    ]
    assert [a.color for a in made] == ["#f19837", "#ffd400"]
    with pytest.raises(InvalidInput) as raised:
        services.annotation_highlight_create(paper=paper, page=1, text="Recent", color="teal")
    assert raised.value.details["semantic_colors"]["positive"] == "#5fb236"


def test_text_not_on_the_page_is_text_not_found_with_a_hint(
    attach: Callable[[Path], Paper],
) -> None:
    paper = attach(EXPOSITORY)
    with pytest.raises(TextNotFound) as raised:
        services.annotation_highlight_create(paper=paper, page=1, text="quantum rotor model")
    assert raised.value.message.startswith("Text not found on page 1.")
    assert "read_pdf_pages" in raised.value.message
    assert raised.value.details["found_on_pages"] == []
    assert not Annotation.objects.exists()


def test_text_on_another_page_names_that_page(attach: Callable[[Path], Paper]) -> None:
    paper = attach(EXPOSITORY)
    with pytest.raises(TextNotFound) as raised:
        services.annotation_highlight_create(paper=paper, page=2, text=WRAPPED)
    assert raised.value.details["found_on_pages"] == [1]
    assert "It is on page 1." in raised.value.message


def test_ambiguous_text_asks_for_more_of_the_sentence(attach: Callable[[Path], Paper]) -> None:
    paper = attach(EXPOSITORY)
    with pytest.raises(InvalidInput) as raised:
        services.annotation_highlight_create(paper=paper, page=1, text="writing")
    assert raised.value.details["occurrences"] > 1
    assert "unique" in raised.value.message


@pytest.mark.parametrize(
    ("page", "text", "message"),
    [
        (5, "Recent work", "Page 5 is out of range: the PDF has 4 page(s) (1-4)."),
        (0, "Recent work", "Page 0 is out of range"),
        (1, " -- ", "text must contain letters or digits"),
    ],
)
def test_bad_highlight_arguments_are_invalid_input(
    attach: Callable[[Path], Paper], page: int, text: str, message: str
) -> None:
    with pytest.raises(InvalidInput) as raised:
        services.annotation_highlight_create(paper=attach(EXPOSITORY), page=page, text=text)
    assert message in raised.value.message


def test_area_annotation_is_a_square_in_the_annotated_copy(
    attach: Callable[[Path], Paper], knowledge_base: Path
) -> None:
    paper = attach(EXPOSITORY)
    annotation = services.annotation_area_create(  # any two opposite corners
        paper=paper, page=1, rect=[300, 600, 50, 700], color="code", comment="Figure 1"
    )
    assert (annotation.kind, annotation.rects, annotation.color) == (
        "area",
        [[50.0, 600.0, 300.0, 700.0]],
        "#f19837",
    )
    assert annotation.text  # the words inside the area
    with annotated(paper, knowledge_base) as document:
        page = document[0]
        [drawn] = list(page.annots())
        assert drawn.type[1] == "Square"
        assert close_to(drawn.colors["stroke"], ORANGE)
        assert drawn.info["content"] == "Figure 1"
        # PDF (50, 600)-(300, 700) is MuPDF (50, 92)-(300, 192) on a 792 pt high page.
        expected = pymupdf.Rect(50, 92, 300, 192)
        assert abs(drawn.rect.x0 - expected.x0) < 2 and abs(drawn.rect.y1 - expected.y1) < 2


@pytest.mark.parametrize(
    ("rect", "message"),
    [
        ([0, 0, 700, 100], "is not inside page 1, whose box is [0.0, 0.0, 612.0, 792.0]"),
        ([-5, 10, 100, 100], "is not inside page 1"),
        ([100, 100, 100, 200], "rect has no area"),
        ([1, 2, 3], "four numbers"),
        ([1, 2, 3, float("nan")], "four numbers"),
    ],
)
def test_area_outside_the_page_or_malformed_is_invalid_input(
    attach: Callable[[Path], Paper], rect: list[float], message: str
) -> None:
    with pytest.raises(InvalidInput) as raised:
        services.annotation_area_create(paper=attach(EXPOSITORY), page=1, rect=rect)
    assert message in raised.value.message


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_annotations_on_rotated_pages_with_shifted_boxes_land_on_the_text(
    make_paper: Callable[..., Paper], knowledge_base: Path, rotation: int
) -> None:
    """Pages whose MediaBox and CropBox do not start at (0, 0), in every rotation."""
    path = knowledge_base / "rotated.pdf"
    with pymupdf.open() as document:
        page = document.new_page(width=612, height=792)
        # Drawn at PDF (100, 692) and (100, 676): the baselines of the two lines.
        page.insert_text((100, 100), "A sentence that starts here", fontsize=12)
        page.insert_text((100, 116), "and finishes on the next line.", fontsize=12)
        document.xref_set_key(page.xref, "MediaBox", "[20 40 632 832]")
        document.xref_set_key(page.xref, "CropBox", "[30 50 600 800]")
        page.set_rotation(rotation)
        document.save(path)
    paper = make_paper(title="Rotated")
    services.pdf_attach_file(paper_id=paper.pk, path=path)
    paper.refresh_from_db()
    annotation = services.annotation_highlight_create(
        paper=paper, page=1, text="starts here and finishes"
    )
    first, second = annotation.rects
    assert 150 < first[0] < first[2] and first[1] < 692 < first[3]
    assert 99 < second[0] < 101 and second[1] < 676 < second[3] < 692
    with annotated(paper, knowledge_base) as document:
        page = document[0]
        [drawn] = list(page.annots())
        assert "starts here" in page.get_textbox(drawn.rect)
    area = services.annotation_area_create(paper=paper, page=1, rect=[30, 650, 600, 800])
    assert "sentence" in area.text and "finishes" in area.text
    with pytest.raises(InvalidInput) as raised:
        services.annotation_area_create(paper=paper, page=1, rect=[21, 41, 100, 100])
    assert raised.value.details["page_box"] == [30.0, 50.0, 600.0, 800.0]


def test_list_filters_by_page_and_delete_redraws_the_copy(
    attach: Callable[[Path], Paper], knowledge_base: Path
) -> None:
    paper = attach(EXPOSITORY)
    first = services.annotation_highlight_create(paper=paper, page=1, text=WRAPPED)
    second = services.annotation_area_create(paper=paper, page=2, rect=[50, 50, 200, 200])
    third = services.annotation_highlight_create(
        paper=paper, page=1, text="The advent of large language models"
    )
    assert list(selectors.annotation_list(paper=paper)) == [first, third, second]
    assert list(selectors.annotation_list(paper=paper, page=2)) == [second]
    services.annotation_delete(annotation_id=first.pk)
    with annotated(paper, knowledge_base) as document:
        names = [a.info["id"] for page in document for a in page.annots()]
    assert names == [annotation_pdf_name(third.pk), annotation_pdf_name(second.pk)]
    services.annotation_delete(annotation_id=third.pk)
    services.annotation_delete(annotation_id=second.pk)
    paper.pdf.refresh_from_db()
    assert paper.pdf.annotated_file_name == ""
    assert sorted(p.name for p in (knowledge_base / "downloads").iterdir()) == [paper.pdf.file_name]
    with pytest.raises(NotFound):
        services.annotation_delete(annotation_id=first.pk)


def test_replacing_the_pdf_redraws_the_annotations_on_the_new_file(
    attach: Callable[[Path], Paper], knowledge_base: Path
) -> None:
    paper = attach(QUANTUM)
    services.annotation_area_create(paper=paper, page=1, rect=[50, 50, 200, 200])
    services.annotation_area_create(paper=paper, page=7, rect=[50, 50, 200, 200])
    services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)  # 4 pages
    with annotated(paper, knowledge_base) as document:
        assert document.page_count == 4 and len(list(document[0].annots())) == 1
    # Both stay, marked with the file they were made on.
    assert {a.pdf_sha256 for a in Annotation.objects.all()} == {FACTS["1111.2011v2.pdf"]["sha256"]}


def test_a_missing_annotated_copy_is_drawn_again(
    attach: Callable[[Path], Paper], knowledge_base: Path
) -> None:
    paper = attach(EXPOSITORY)
    services.annotation_highlight_create(paper=paper, page=1, text=WRAPPED)
    copy = knowledge_base / "downloads" / paper.pdf.annotated_file_name
    copy.unlink()
    services.annotation_area_create(paper=paper, page=2, rect=[50, 50, 200, 200])
    with pymupdf.open(copy) as document:
        assert [len(list(page.annots())) for page in document] == [1, 1, 0, 0]
    copy.unlink()
    assert services.annotated_pdf_path(paper=paper) == copy and copy.is_file()


def test_export_as_json_and_markdown(attach: Callable[[Path], Paper]) -> None:
    paper = attach(EXPOSITORY)
    highlight = services.annotation_highlight_create(
        paper=paper, page=1, text=WRAPPED, color="positive", comment="Key claim"
    )
    services.annotation_area_create(paper=paper, page=2, rect=[50, 50, 200, 200], color="code")
    exported = json.loads(selectors.annotations_export_text(paper=paper, format="json"))
    assert exported["paper_id"] == paper.pk and len(exported["annotations"]) == 2
    first = exported["annotations"][0]
    assert first["annotation_id"] == highlight.pk and first["comment"] == "Key claim"
    assert first["position"] == {"pageIndex": 0, "rects": highlight.rects}
    markdown = selectors.annotations_export_text(paper=paper, format="markdown")
    assert markdown.startswith(f"# Annotations: {paper.title}\n")
    assert "## Page 1\n\n> Recent work has shown" in markdown
    assert "Comment: Key claim (colour #5fb236" in markdown
    assert "## Page 2\n\n*Area [50, 50, 200, 200]*" in markdown
    with pytest.raises(InvalidInput):
        selectors.annotations_export_text(paper=paper, format="docx")


def test_annotating_a_paper_without_pdf_says_how_to_attach(
    make_paper: Callable[..., Paper],
) -> None:
    with pytest.raises(PdfNotAvailable):
        services.annotation_highlight_create(paper=make_paper(), page=1, text="anything")


def test_database_refuses_bad_colours_and_pages(attach: Callable[[Path], Paper]) -> None:
    from django.db import IntegrityError, transaction

    paper = attach(EXPOSITORY)
    for values in ({"color": "red", "page": 1}, {"color": "#ff0000", "page": 0}):
        with pytest.raises(IntegrityError), transaction.atomic():
            Annotation.objects.create(paper=paper, kind="area", rects=[[0, 0, 1, 1]], **values)


def test_a_quote_inside_one_word_covers_only_its_part(attach: Callable[[Path], Paper]) -> None:
    paper = attach(EXPOSITORY)
    whole = services.annotation_highlight_create(paper=paper, page=1, text="Siangliulue")
    part = services.annotation_highlight_create(paper=paper, page=1, text="iangliul")
    [[x0, y0, x1, y1]], [[px0, py0, px1, py1]] = whole.rects, part.rects
    assert (py0, py1) == (y0, y1)
    assert x0 < px0 < px1 < x1
    assert (whole.text, part.text) == ("Siangliulue", "iangliul")  # what was quoted


def test_highlights_at_known_boxes_are_drawn_in_one_write(
    attach: Callable[[Path], Paper], knowledge_base: Path
) -> None:
    paper = attach(EXPOSITORY)
    found = services.annotation_highlight_create(paper=paper, page=1, text=WRAPPED)
    services.annotation_delete(annotation_id=found.pk)
    marks = [
        services.HighlightAt(page=1, rects=found.rects, text=found.text, color="section2",
                             comment="extraction: claim (agent:a)"),
        services.HighlightAt(page=1, rects=found.rects[:1], text="Recent work", comment="b"),
    ]  # fmt: skip
    first, second = services.annotation_highlights_place(paper=paper, marks=marks)
    assert (first.rects, first.text, first.color) == (found.rects, found.text, "#a28ae5")
    assert (second.color, second.comment) == ("#ffd400", "b")
    with annotated(paper, knowledge_base) as document:
        page = document[0]
        drawn = {a.info["content"]: a.type[1] for a in page.annots()}
        assert drawn == {"extraction: claim (agent:a)": "Highlight", "b": "Highlight"}
    assert services.annotation_highlights_place(paper=paper, marks=[]) == []


@pytest.mark.parametrize(
    ("page", "rects", "text", "field"),
    [
        (9, [[100, 100, 200, 110]], "words", "page"),
        (1, [], "words", "rects"),
        (1, [[100, 100, 200]], "words", "rects"),
        (1, [[200, 100, 100, 110]], "words", "rects"),
        (1, [[5000, 5000, 5100, 5010]], "words", "rects"),
        (1, [[100, 100, 200, 110]], " - ", "text"),
    ],
)
def test_highlights_at_boxes_off_the_page_are_invalid_and_nothing_is_stored(
    attach: Callable[[Path], Paper], page: int, rects: list[list[float]], text: str, field: str
) -> None:
    paper = attach(EXPOSITORY)
    good = services.HighlightAt(page=1, rects=[[100, 100, 200, 110]], text="words")
    with pytest.raises(InvalidInput) as raised:
        services.annotation_highlights_place(
            paper=paper, marks=[good, services.HighlightAt(page=page, rects=rects, text=text)]
        )
    assert raised.value.details["field"] == field
    assert not Annotation.objects.exists()


def test_deleting_several_annotations_redraws_the_copy_without_them(
    attach: Callable[[Path], Paper], knowledge_base: Path
) -> None:
    paper, other = attach(EXPOSITORY), attach(QUANTUM)
    kept, first, second = (
        services.annotation_highlight_create(paper=paper, page=1, text=text, comment=text)
        for text in ("The advent of large language models", WRAPPED, "Siangliulue")
    )
    elsewhere = services.annotation_area_create(paper=other, page=1, rect=[100, 100, 200, 200])
    ids = [first.pk, second.pk, elsewhere.pk, 999_999]  # another paper's and a gone one skipped
    assert services.annotations_delete(paper=paper, annotation_ids=ids) == 2
    assert list(Annotation.objects.order_by("pk")) == [kept, elsewhere]
    with annotated(paper, knowledge_base) as document:
        page = document[0]
        assert [a.info["content"] for a in page.annots()] == [kept.comment]
    assert services.annotations_delete(paper=paper, annotation_ids=[]) == 0

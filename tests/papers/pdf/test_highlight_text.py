"""The text a highlight stores, on two real two-column ACL papers: a hyphen that only
breaks a word at a line end is joined away ('litera-' + 'ture' -> 'literature'), real
hyphens stay ('state-of-the-art', 'document-level', 'MED-LINE'), and the text and boxes
are what was quoted, no more, whichever path stores the highlight (create_highlight's
service and the extraction's placed highlights)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from core.errors import InvalidInput
from papers.models import Paper
from papers.pdf import services
from papers.pdf.locate import Vocabulary, line_break_join
from papers.pdf.reading import WORD_FLAGS
from tests.papers.pdf.builders import FIXTURES

LITERATURE_GRAPH = FIXTURES / "N18-3011.pdf"  # "Construction of the Literature Graph..."
SPECTER = FIXTURES / "2020.acl-main.207.pdf"  # "SPECTER: Document-level Representation..."


@pytest.fixture(autouse=True)
def knowledge_base(settings: Any, tmp_path: Path) -> Path:
    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.ASSETS_DIR = tmp_path / "assets"
    settings.CELERY_TASK_ALWAYS_EAGER = True
    return tmp_path


@pytest.fixture
def attach(make_paper: Callable[..., Paper]) -> Callable[[Path], Paper]:
    def make(path: Path) -> Paper:
        paper = make_paper(title=f"Paper {path.stem}")
        services.pdf_attach_file(paper_id=paper.pk, path=path)
        paper.refresh_from_db()
        return paper

    return make


def middle(box: tuple[float, ...]) -> pymupdf.Point:
    return pymupdf.Point((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)


def words_in(path: Path, page: int, rects: list[list[float]]) -> list[str]:
    """The words whose middle lies inside the stored boxes (PDF space)."""
    with pymupdf.open(path) as document:
        pdf_page = document[page - 1]
        boxes = [pymupdf.Rect(rect) * pdf_page.transformation_matrix for rect in rects]
        return [
            word[4]
            for word in pdf_page.get_text("words", flags=WORD_FLAGS)
            if any(box.contains(middle(word[:4])) for box in boxes)
        ]


@pytest.mark.parametrize(
    ("path", "page", "selected", "stored"),
    [
        # The reader's selection across the line break, as Chromium gives it.
        (
            LITERATURE_GRAPH,
            1,
            "published scientific litera-\nture into",
            "published scientific literature into",
        ),
        (
            LITERATURE_GRAPH,
            1,
            "graph to facili- tate algorithmic",
            "graph to facilitate algorithmic",
        ),
        (LITERATURE_GRAPH, 2, "a directed author-\nship edge", "a directed authorship edge"),
        (SPECTER, 1, "a critical ingre-\ndient for", "a critical ingredient for"),
        (SPECTER, 2, "2019) uses multi- ple layers", "2019) uses multiple layers"),
    ],
)
def test_a_hyphen_that_breaks_a_word_at_a_line_end_is_joined(
    attach: Callable[[Path], Paper], path: Path, page: int, selected: str, stored: str
) -> None:
    annotation = services.annotation_highlight_create(paper=attach(path), page=page, text=selected)
    assert annotation.text == stored
    assert len(annotation.rects) == 2  # still one box per line


@pytest.mark.parametrize(
    ("path", "page", "selected", "stored"),
    [
        # The part after the break holds hyphens itself.
        (
            SPECTER,
            1,
            "to incorporate state-\nof-the-art pretrained",
            "to incorporate state-of-the-art pretrained",
        ),
        # The paper prints the compound inside a line elsewhere on the page.
        (
            SPECTER,
            1,
            "Embeddings using Citation-\ninformed TransformERs",
            "Embeddings using Citation-informed TransformERs",
        ),
        (
            SPECTER,
            2,
            "suite for document-\nlevel embeddings",
            "suite for document-level embeddings",
        ),
        # The word after the break starts with a capital.
        (
            LITERATURE_GRAPH,
            2,
            "(e.g., DBLP, MED-\nLINE), pre-publishing",
            "(e.g., DBLP, MED-LINE), pre-publishing",
        ),
        # Hyphens inside a line are never touched.
        (SPECTER, 1, "without task-specific fine-tuning.", "without task-specific fine-tuning."),
    ],
)
def test_real_hyphens_are_kept(
    attach: Callable[[Path], Paper], path: Path, page: int, selected: str, stored: str
) -> None:
    annotation = services.annotation_highlight_create(paper=attach(path), page=page, text=selected)
    assert annotation.text == stored


def test_the_text_and_boxes_are_the_selection_not_the_whole_words(
    attach: Callable[[Path], Paper],
) -> None:
    paper = attach(LITERATURE_GRAPH)
    whole = services.annotation_highlight_create(
        paper=paper, page=1, text="published scientific litera-\nture into"
    )
    # Selected from inside 'published' to inside 'into', as a drag that starts mid-word does.
    part = services.annotation_highlight_create(
        paper=paper, page=1, text="lished scientific litera-\nture in"
    )
    assert part.text == "lished scientific literature in"
    (wx0, wy0, wx1, _), (vx0, vy0, vx1, _) = whole.rects
    (px0, py0, px1, _), (qx0, qy0, qx1, _) = part.rects
    assert (py0, qy0) == (wy0, vy0)
    assert wx0 < px0 and px1 == wx1  # starts inside the first word, runs to the line end
    assert qx0 == vx0 and qx1 < vx1  # ends inside the last word
    assert words_in(LITERATURE_GRAPH, 1, whole.rects) == [
        "published", "scientific", "litera-", "ture", "into",
    ]  # fmt: skip


def test_punctuation_at_the_ends_is_kept_only_when_selected(
    attach: Callable[[Path], Paper],
) -> None:
    paper = attach(LITERATURE_GRAPH)
    bare = services.annotation_highlight_create(paper=paper, page=2, text="e.g., DBLP")
    quoted = services.annotation_highlight_create(paper=paper, page=2, text="(e.g., DBLP,")
    assert (bare.text, quoted.text) == ("e.g., DBLP", "(e.g., DBLP,")


def test_placed_highlights_store_the_same_text_as_found_ones(
    attach: Callable[[Path], Paper],
) -> None:
    # Extraction's verified quotes arrive with their boxes and the words as matched.
    paper = attach(LITERATURE_GRAPH)
    found = services.annotation_highlight_create(
        paper=paper, page=1, text="published scientific litera-\nture into"
    )
    (placed,) = services.annotation_highlights_place(
        paper=paper,
        marks=[
            services.HighlightAt(
                page=1, rects=found.rects, text="published scientific litera- ture into"
            )
        ],
    )
    assert placed.text == found.text == "published scientific literature into"
    assert placed.rects == found.rects


def test_the_line_break_rule() -> None:
    seen = Vocabulary(joined=frozenset({"corpus"}), compounds=frozenset({"document-level"}))
    assert line_break_join("cor-", "pus,", seen) == "corpus,"  # seen joined
    assert line_break_join("document-", "level", seen) == "document-level"  # seen hyphenated
    assert line_break_join("BERT-", "Base", seen) == "BERT-Base"  # a capital after the break
    assert line_break_join("COVID-", "19", seen) == "COVID-19"
    assert line_break_join("state-", "of-the-art", seen) == "state-of-the-art"
    assert line_break_join("pre-", "and", seen) == "pre- and"  # a suspended hyphen
    assert line_break_join("litera-", "ture", seen) == "literature"  # the typesetter's


def test_the_selections_boxes_pick_the_occurrence_selected(
    attach: Callable[[Path], Paper],
) -> None:
    # Twice on page 1: in the abstract (left column) and in the introduction (right).
    twice = "reduce literature graph construction into familiar NLP"
    paper = attach(LITERATURE_GRAPH)
    with pytest.raises(InvalidInput, match="occurs 2 times"):
        services.annotation_highlight_create(paper=paper, page=1, text=twice)
    right_column = [[320.0, 80.0, 560.0, 500.0]]  # PDF points, origin bottom-left
    marked = services.annotation_highlight_create(
        paper=paper, page=1, text=twice, near=right_column
    )
    assert marked.text == twice and marked.rects[0][0] > 306  # the introduction's
    with pytest.raises(InvalidInput, match="near must be boxes"):
        services.annotation_highlight_create(
            paper=paper, page=1, text=twice, near=[[900.0, 900.0, 950.0, 950.0]]
        )

"""The passage index of the library's PDFs and the quotes found through it (issue 22):
passages keep their page and line boxes, two-column order and hyphenation are handled,
running footers left out; the index follows attach/replace/detach; search_passages ranks
them; find_quote tolerates what copying does to a quote and says when it is not there."""

from __future__ import annotations

import sys
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from django.core.management import CommandError, call_command

from core.errors import InvalidInput
from mcp_endpoint.tools.passages import quote_answer
from papers.models import Annotation, Paper, Passage, PassageTerm
from papers.passages import quotes, ranking, services
from papers.passages.extract import PagePassage
from papers.passages.selectors import page_passages, passage_search, quote_find
from papers.pdf import services as pdf_services
from papers.pdf.errors import PdfNotAvailable
from papers.search import embedding
from tests.core.builders import Terminal, segments
from tests.papers.passages.builders import ACL, LIGATURE_QUOTE
from tests.papers.pdf.builders import EXPOSITORY, FIXTURES, QUANTUM, WRAPPED
from tests.zotero_fake import FakeZotero, default_items

HYPHENATED = FIXTURES / "grobid-dehypenisation1.pdf"  # 'dehypenisa-' / 'tion'


@pytest.fixture(autouse=True)
def knowledge_base(settings: Any, tmp_path: Path) -> Path:
    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.ASSETS_DIR = tmp_path / "assets"
    # The index task runs here, on this process's folders (the PG run has a worker).
    settings.CELERY_TASK_ALWAYS_EAGER = True
    return tmp_path


@pytest.fixture
def attach(
    make_paper: Callable[..., Paper], django_capture_on_commit_callbacks: Any
) -> Callable[[Path], Paper]:
    """A paper with this PDF attached, its after-commit work (the index task) run."""

    def make(path: Path) -> Paper:
        paper = make_paper(title=f"Paper {path.stem}", authors=["A. Writer"])
        with django_capture_on_commit_callbacks(execute=True):
            pdf_services.pdf_attach_file(paper_id=paper.pk, path=path)
        return paper

    return make


def test_attaching_a_pdf_indexes_paragraph_sized_passages_with_pages_and_line_boxes(
    attach: Callable[[Path], Paper],
) -> None:
    paper = attach(ACL)
    passages = page_passages(paper_id=paper.pk)
    assert {p.page for p in passages} == set(range(1, 9))
    words = sorted(len(p.text.split()) for p in passages)
    assert words[len(words) // 2] >= 50 and words[-1] <= 210
    first = passages[0]
    assert first.order == 1 and first.pdf_sha256 == paper.pdf.sha256
    # One box per line, PDF points with the origin bottom-left: the title is near the top.
    assert len(first.rects) >= 3
    x0, y0, x1, y1 = first.rects[0]
    assert x0 < x1 and y0 < y1 and y0 > 700
    assert PassageTerm.objects.filter(passage__paper=paper).count() > 1000


def test_two_columns_are_read_left_column_first_and_running_footers_are_left_out(
    attach: Callable[[Path], Paper],
) -> None:
    paper = attach(ACL)
    text = " ".join(p.text for p in page_passages(paper_id=paper.pk, page=1))
    # The left column's last line runs on at the top of the right column.
    assert "Which of my co-authors published one or more papers on coreference" in text
    everything = " ".join(p.text for p in page_passages(paper_id=paper.pk))
    assert "Proceedings of NAACL-HLT 2018" not in everything
    assert " 85 " not in f" {' '.join(p.text for p in page_passages(paper_id=paper.pk, page=2))} "


def test_hyphenation_at_a_line_end_is_undone_and_ligatures_expanded(
    attach: Callable[[Path], Paper],
) -> None:
    [passage] = page_passages(paper_id=attach(HYPHENATED).pk)
    assert passage.text == "We test the dehypenisation of a short text."
    assert len(passage.rects) == 2
    acl = page_passages(paper_id=attach(ACL).pk, page=2)
    joined = " ".join(p.text for p in acl)
    assert "graph with directed edges" in joined and "different types" in joined
    assert "ﬀ" not in joined


def test_the_index_follows_a_replaced_and_a_removed_pdf(
    attach: Callable[[Path], Paper], django_capture_on_commit_callbacks: Any
) -> None:
    paper = attach(EXPOSITORY)
    before = set(Passage.objects.filter(paper=paper).values_list("pdf_sha256", flat=True))
    with django_capture_on_commit_callbacks(execute=True):
        pdf_services.pdf_attach_file(paper_id=paper.pk, path=QUANTUM)
    paper.refresh_from_db()
    after = set(Passage.objects.filter(paper=paper).values_list("pdf_sha256", flat=True))
    assert after == {paper.pdf.sha256} and after != before
    assert max(Passage.objects.filter(paper=paper).values_list("page", flat=True)) == 8
    assert pdf_services.pdf_detach(paper_id=paper.pk)
    assert not Passage.objects.filter(paper=paper).exists()
    assert not PassageTerm.objects.filter(passage__paper=paper).exists()


def test_reindexing_an_unchanged_pdf_is_skipped_unless_forced(
    attach: Callable[[Path], Paper],
) -> None:
    paper = attach(HYPHENATED)
    first = Passage.objects.get(paper=paper).pk
    assert services.passages_index(paper_id=paper.pk).status == "unchanged"
    assert Passage.objects.get(paper=paper).pk == first
    outcome = services.passages_index(paper_id=paper.pk, force=True)
    assert (outcome.status, outcome.passages) == ("indexed", 1)
    assert Passage.objects.get(paper=paper).pk != first


def test_search_passages_returns_the_page_and_bolds_the_query_words(
    attach: Callable[[Path], Paper],
) -> None:
    acl, other = attach(ACL), attach(EXPOSITORY)
    hits = passage_search(query="property graph directed edges nodes", limit=3)
    assert hits[0].paper_id == acl.pk and hits[0].page == 2
    assert "**graph**" in hits[0].snippet and hits[0].rects
    assert hits[0].score >= hits[-1].score
    only_other = passage_search(query="property graph directed edges", paper_ids=[other.pk])
    assert {hit.paper_id for hit in only_other} <= {other.pk}
    assert passage_search(query="graph", paper_ids=[]) == []
    with pytest.raises(InvalidInput):
        passage_search(query="  ?! ")


def test_passages_are_embedded_and_ranked_by_meaning_as_well_as_words(
    attach: Callable[[Path], Paper],
) -> None:
    acl = attach(ACL)
    attach(EXPOSITORY)
    [target] = [p for p in page_passages(paper_id=acl.pk, page=2) if "property graph" in p.text]
    assert target.model == embedding.load_model().name and target.vector
    # Few of the passage's words: the vector half of the hybrid ranks it first too.
    paraphrase = "a labelled multigraph whose vertices and arcs carry attributes"
    ids, _ = ranking.semantic_ranking(paraphrase, paper_ids=None, limit=3)
    assert ids[0] == target.pk
    assert target.pk in [hit.passage_id for hit in passage_search(query=paraphrase, limit=3)]


def test_a_search_hit_can_be_passed_straight_to_create_highlight(
    attach: Callable[[Path], Paper],
) -> None:
    paper = attach(ACL)
    [hit] = passage_search(query="deterministically remove duplicate papers", limit=1)
    annotation = pdf_services.annotation_highlight_create(
        paper=paper, page=hit.page, text=hit.snippet
    )
    assert annotation.page == hit.page == 2
    assert "remove duplicate papers" in annotation.text


@pytest.mark.parametrize(
    ("quote", "why"),
    [
        (WRAPPED, "plain"),
        (WRAPPED.replace("new technology", "new tech-\nnology"), "line break with hyphen"),
        (WRAPPED.replace("ideation", "ideation\n"), "line break"),
        (WRAPPED.replace("Recent work", "“Recent work”"), "curly quotes"),
    ],
)
def test_find_quote_finds_a_quote_copied_from_the_pdf(
    attach: Callable[[Path], Paper], quote: str, why: str
) -> None:
    paper = attach(EXPOSITORY)
    attach(ACL)
    match = quote_find(text=quote)
    assert (match.status, match.paper_id, match.page) == ("found", paper.pk, 1), why
    assert len(match.rects) == 3 and match.similarity == 1.0
    assert match.matched_text == WRAPPED  # as printed, the line-end hyphen joined


def test_find_quote_finds_ligatures_and_a_dropped_hyphen(attach: Callable[[Path], Paper]) -> None:
    paper = attach(ACL)
    match = quote_find(text=LIGATURE_QUOTE.replace("di", "di").replace("directed", "di-rected"))
    assert (match.status, match.paper_id, match.page) == ("found", paper.pk, 2)
    ligatures = quote_find(text="nodes and edges of ﬀerent".replace("ﬀ", "diﬀ"))
    assert (ligatures.status, ligatures.page) == ("found", 2)


def test_a_quote_with_changed_words_is_approximate_with_the_closest_text(
    attach: Callable[[Path], Paper],
) -> None:
    paper = attach(ACL)
    changed = LIGATURE_QUOTE.replace("property graph", "labelled graph").replace(
        "internal structure", "inner structure"
    )
    match = quote_find(text=changed)
    assert (match.status, match.paper_id, match.page) == ("approximate", paper.pk, 2)
    assert quotes.APPROXIMATE_MIN <= match.similarity < 1.0
    assert match.closest_text and "property graph" in match.closest_text
    assert match.rects


def test_a_made_up_quote_is_not_found(attach: Callable[[Path], Paper]) -> None:
    attach(ACL)
    attach(EXPOSITORY)
    match = quote_find(
        text="Our results show that citation graphs are rarely useful for ranking papers by "
        "their long-term influence on clinical practice."
    )
    assert match.status == "not_found" and match.matched_text is None


def test_a_quote_from_another_paper_is_not_found_in_this_one(
    attach: Callable[[Path], Paper],
) -> None:
    acl, expository = attach(ACL), attach(EXPOSITORY)
    assert quote_find(text=WRAPPED, paper_ids=[acl.pk]).status == "not_found"
    assert quote_find(text=WRAPPED, paper_ids=[expository.pk]).status == "found"
    assert quote_find(text=WRAPPED, paper_ids=[]).status == "not_found"


def test_verify_on_a_paper_without_a_pdf_is_refused(make_paper: Callable[..., Paper]) -> None:
    paper = make_paper(title="No PDF here")
    with pytest.raises(PdfNotAvailable):
        quote_find(text="anything at all", paper_ids=[paper.pk])


def test_reindex_passages_command_indexes_every_pdf_with_a_progress_bar(
    attach: Callable[[Path], Paper], monkeypatch: pytest.MonkeyPatch
) -> None:
    paper = attach(HYPHENATED)
    Passage.objects.filter(paper=paper).delete()
    out, err, screen = StringIO(), StringIO(), Terminal()
    monkeypatch.setattr(sys, "stderr", screen)  # the bar is drawn on a terminal only
    call_command("reindex_passages", "--all", stdout=out, stderr=err)
    assert Passage.objects.filter(paper=paper).count() == 1
    assert "1 paper" in out.getvalue()
    assert any("Passages" in part and "100%" in part for part in segments(screen.getvalue()))
    call_command("reindex_passages", "--paper", str(paper.pk), stdout=out, stderr=err)
    assert "unchanged" in out.getvalue()


def test_verify_indexes_a_pdf_attached_before_the_index_existed(
    attach: Callable[[Path], Paper],
) -> None:
    paper = attach(EXPOSITORY)
    Passage.objects.filter(paper=paper).delete()
    answer = quote_answer(text=WRAPPED, paper_ids=[paper.pk])
    assert (answer.status, answer.page) == ("found", 1)
    assert Passage.objects.filter(paper=paper).exists()


def test_highlight_from_a_found_quote_uses_the_seed_colour_and_not_in_read_only_mode(
    attach: Callable[[Path], Paper],
) -> None:
    paper = attach(EXPOSITORY)
    refused = quote_answer(text=WRAPPED, paper_ids=None, highlight=True, read_only=True)
    assert refused.highlight and "read-only" in refused.highlight["error"]
    assert not Annotation.objects.filter(paper=paper).exists()
    made = quote_answer(text=WRAPPED, paper_ids=None, highlight=True)
    assert made.highlight is not None
    annotation = Annotation.objects.get(pk=made.highlight["annotation_id"])
    assert (annotation.page, annotation.color, annotation.rects) == (1, "#5fb236", made.rects)


def test_highlight_from_an_approximate_quote_marks_the_closest_text_in_grey(
    attach: Callable[[Path], Paper],
) -> None:
    paper = attach(ACL)
    changed = LIGATURE_QUOTE.replace("property graph", "labelled graph")
    made = quote_answer(text=changed, paper_ids=[paper.pk], highlight=True)
    assert made.status == "approximate" and made.highlight is not None
    annotation = Annotation.objects.get(pk=made.highlight["annotation_id"])
    assert (annotation.page, annotation.color) == (2, "#aaaaaa")
    assert "property graph" in annotation.text


def test_reindex_passages_goes_on_past_a_missing_file_and_fails_at_the_end(
    attach: Callable[[Path], Paper], knowledge_base: Path
) -> None:
    gone, kept = attach(HYPHENATED), attach(EXPOSITORY)
    (knowledge_base / "downloads" / gone.pdf.file_name).unlink()
    Passage.objects.filter(paper=kept).delete()
    with pytest.raises(CommandError) as raised:
        call_command("reindex_passages", "--all", "--force", "--no-progress", stdout=StringIO())
    assert raised.value.returncode == 1 and "1 of 2 papers failed" in str(raised.value)
    assert Passage.objects.filter(paper=kept).exists()
    with pytest.raises(CommandError) as unknown:
        call_command("reindex_passages", "--paper", "999999", stdout=StringIO())
    assert unknown.value.returncode == 2


def test_a_quote_copied_with_a_compound_broken_at_a_line_end_is_found_among_many_whole_ones(
    attach: Callable[[Path], Paper], make_paper: Callable[..., Paper], tmp_path: Path
) -> None:
    # As in 2020.acl-main.207 p.1: 'pre-' / 'trained' at a line end. The passage reads
    # 'pretrained'; the quote as copied, 'pre- trained'. Papers that print 'pre-trained'
    # whole on one line must not push the quoted passage out of the candidates.
    lines = [
        "Our system incorporates inter-document context into the language models",
        "to learn document representations that are effective across a wide variety",
        "of downstream tasks, without the need for any task-specific fine-tuning",
        "of the pre-",
        "trained language model. We specifically use cita-",
        "tions as a naturally occurring, inter-document in-",
        "cidental supervision signal indicating which documents are most related",
        "and formulate the signal into a triplet-loss pretraining objective.",
    ]
    document = pymupdf.open()
    page = document.new_page()
    for number, line in enumerate(lines):
        page.insert_text((72, 120 + 14 * number), line, fontsize=11)
    path = tmp_path / "compound.pdf"
    document.save(path)
    paper = attach(path)
    assert "the pretrained language model" in page_passages(paper_id=paper.pk)[0].text
    for number in range(quotes.CANDIDATES + 5):
        other = make_paper(title=f"Fine-tuning study {number}", authors=["B. Other"])
        text = (
            f"We study task-specific fine-tuning of the pre-trained language model {number}. "
            "We specifically use the pre-trained language model without task-specific "
            "fine-tuning of the pre-trained weights."
        )
        services.passages_write(
            paper_id=other.pk, sha256="0" * 64, passages=[PagePassage(1, 1, text, [])]
        )
    quote = (
        "task-specific fine-tuning of the pre- trained language model. We specifically use "
        "cita- tions"
    )
    for copied in (quote, quote.replace("pre- ", "pre-\n"), quote.replace("fi", "ﬁ")):
        match = quote_find(text=copied)
        assert (match.status, match.paper_id, match.page) == ("found", paper.pk, 1), copied


def test_pdfs_imported_from_zotero_are_indexed_for_passages(
    db: None, settings: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    # Zotero's local PDFs come in through import_zotero, which attaches them: the library's
    # own copies, indexed like any attach (the zotero_* tools read Zotero's files live).
    with FakeZotero(default_items(tmp_path / "gone")) as zotero:
        settings.ZOTERO_BBT_URL = zotero.bbt_url
        settings.ZOTERO_TIMEOUT = 5
        with django_capture_on_commit_callbacks(execute=True):
            call_command("import_zotero", "--no-progress", stdout=StringIO(), stderr=StringIO())
    shen = Paper.objects.get(citekey="shen2023beyond")
    assert Passage.objects.filter(paper=shen).exists()
    match = quote_find(text=WRAPPED)
    assert (match.status, match.paper_id, match.page) == ("found", shen.pk, 1)

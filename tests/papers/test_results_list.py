"""The Paper list as results to read (issue 36), searched or not: each row's full title
links to the reading page, with authors, short venue, year, markers and, searched, the
passage search_papers gives, highlighted and escaped; a corrected typo is said; the page is
titled by the search; the sort is shown and can be changed, keeping query and filters."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from papers.models import Paper, PaperPdf, Venue
from papers.search.local import local_search

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/papers/paper/"
TITLE_LINK = re.compile(r'class="result-title" href="/admin/papers/paper/(\d+)/read/"')
SORT_LINK = re.compile(r'<li><a href="([^"]*)"( aria-current="true" class="current")?>([^<]+)</a>')


def sort_nav(page: str) -> list[tuple[str, str, str]]:
    nav = page[page.index('<nav class="results-sort"') :]
    return SORT_LINK.findall(nav[: nav.index("</nav>")])


def sort_links(page: str) -> list[tuple[str, bool]]:
    """The sorts offered above the list: (label, whether it is the one shown)."""
    return [(label, bool(current)) for _, current, label in sort_nav(page)]


def sort_url(page: str, label: str) -> str:
    return next(url for url, _, shown in sort_nav(page) if shown == label)


def listed(page: str) -> list[int]:
    return [int(pk) for pk in TITLE_LINK.findall(page)]


ABSTRACT = (
    "We propose the Transformer, a network architecture based solely on attention "
    "mechanisms, dispensing with recurrence and convolutions entirely."
)


@pytest.fixture
def library(make_paper: Callable[..., Paper]) -> dict[str, Paper]:
    long_title = (
        "Attention Is All You Need: a very long title that goes on well past ninety "
        "characters to check that nothing cuts it short"
    )
    attention = make_paper(
        long_title, abstract=ABSTRACT, year=2017, venue="Advances in Neural Information",
        authors=["Ashish Vaswani", "Noam Shazeer", "Niki Parmar", "Jakob Uszkoreit"],
    )  # fmt: skip
    Venue.objects.filter(papers=attention).update(short_name="neurips")
    PaperPdf.objects.create(
        paper=attention, file_name="attention.pdf", sha256="0" * 64, size=10, page_count=1,
        origin=PaperPdf.Origin.UPLOADED,
    )  # fmt: skip
    retracted = make_paper(
        "Recurrent attention for images", abstract="Attention over image regions.",
        year=2014, authors=["Volodymyr Mnih"],
    )  # fmt: skip
    Paper.objects.filter(pk=retracted.pk).update(retraction_status="retracted")
    hostile = make_paper(
        "<script>alert('x')</script> Attention hijacked",
        abstract="Attention <img src=x onerror=alert(1)> and **bold** claims.",
        year=2020, authors=["Mallory"],
    )  # fmt: skip
    return {"attention": attention, "retracted": retracted, "hostile": hostile}


def test_each_result_reads_as_a_result(admin_client: Client, library: dict[str, Paper]) -> None:
    response = admin_client.get(CHANGELIST, {"q": "attention mechanisms"})
    page = response.content.decode()
    attention = library["attention"]
    assert response.context["title"] == "Search: attention mechanisms"
    assert "<title>Search: attention mechanisms" in page
    assert "Select paper to change" not in page
    assert sort_links(page) == [("Relevance", True), ("Recently added", False),
                                ("Newest", False), ("Title", False)]  # fmt: skip
    # The full title, to the reading page; the edit form one link away.
    assert f'href="/admin/papers/paper/{attention.pk}/read/">{attention.title}</a>' in page
    assert f'class="result-edit" href="/admin/papers/paper/{attention.pk}/change/"' in page
    assert "Ashish Vaswani, Noam Shazeer, Niki Parmar et al. · NEURIPS · 2017" in page
    assert "Jakob Uszkoreit" not in page
    assert "<mark>attention</mark> <mark>mechanisms</mark>" in page
    row = page[page.index(f"/{attention.pk}/read/") :]
    assert row.index("result-pdf") < row.index("</tr>")
    retracted_row = page[page.index(f"/{library['retracted'].pk}/read/") :]
    assert 'result-retraction">Retracted</span>' in retracted_row[: retracted_row.index("</tr>")]
    assert "sortable" not in page  # relevance is the order: no column to sort by
    assert 'name="_selected_action"' in page and 'name="action"' in page


def test_the_list_has_search_papers_order_and_passages(
    admin_client: Client, library: dict[str, Paper]
) -> None:
    query = "attention images"
    page = admin_client.get(CHANGELIST, {"q": query}).content.decode()
    hits = local_search(query=query, limit=10).hits
    assert [int(pk) for pk in TITLE_LINK.findall(page)] == [h.record["paper_id"] for h in hits]
    for hit in hits:
        passage = hit.snippet_markdown.replace("**", "")
        assert passage.split()[0] in page


def test_a_hostile_title_and_abstract_stay_text(
    admin_client: Client, library: dict[str, Paper]
) -> None:
    page = admin_client.get(CHANGELIST, {"q": "hijacked attention"}).content.decode()
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; Attention hijacked</a>" in page
    assert "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "**bold**" in page  # the paper's own asterisks, not emphasis


def test_a_corrected_typo_is_said_with_a_way_back(
    admin_client: Client, library: dict[str, Paper]
) -> None:
    response = admin_client.get(CHANGELIST, {"q": "recurent"})
    page = response.content.decode()
    assert "Showing results for <strong>recurrent</strong>" in page
    assert "Search instead for recurent" in page
    listed = [int(pk) for pk in TITLE_LINK.findall(page)]
    found = local_search(query="recurent")
    assert listed == [hit.record["paper_id"] for hit in found.hits]
    assert found.notes[-1].endswith(", for: recurrent")  # what search_papers says
    assert listed[0] == library["retracted"].pk
    assert "<mark>Recurrent</mark>" in page
    exact = admin_client.get(CHANGELIST, {"q": "recurent", "exact": "1"})
    assert exact.status_code == 200
    assert list(exact.context["cl"].result_list) == []
    assert "Showing results for" not in exact.content.decode()


def test_what_the_search_read_from_the_question_is_said(
    admin_client: Client, library: dict[str, Paper]
) -> None:
    """The notes search_papers gives for a question the library's search read (an author,
    years) show above the list; when what it read left nothing, the list is the words'
    results and the note says the filters were left out."""
    page = admin_client.get(CHANGELIST, {"q": "attention by Vaswani"}).content.decode()
    assert listed(page) == [library["attention"].pk]
    assert '<p class="search-note">understood' in page and "Vaswani" in page
    stepped_back = admin_client.get(CHANGELIST, {"q": "attention since 2024"}).content.decode()
    assert set(listed(stepped_back)) == {p.pk for p in library.values()}
    note = (
        '<p class="search-note">no paper in the library passes the search&#x27;s filters '
        "with those read"
    )
    assert note in stepped_back
    assert "year_from=2024" in stepped_back
    plain = admin_client.get(CHANGELIST, {"q": "attention"}).content.decode()
    assert 'class="search-note"' not in plain


def test_the_unsearched_list_reads_as_results_newest_added_first(
    admin_client: Client, library: dict[str, Paper]
) -> None:
    response = admin_client.get(CHANGELIST)
    page = response.content.decode()
    assert response.context["title"] == "Papers"
    assert "Select paper to change" not in page
    attention, retracted, hostile = library["attention"], library["retracted"], library["hostile"]
    assert listed(page) == [hostile.pk, retracted.pk, attention.pk]  # the last added first
    assert sort_links(page) == [("Recently added", True), ("Newest", False), ("Title", False)]
    # The same row as a search's, without a passage: one rendering (results_list.result_row).
    assert len(attention.title) > 90  # shown whole
    assert f'href="/admin/papers/paper/{attention.pk}/read/">{attention.title}</a>' in page
    assert f'class="result-edit" href="/admin/papers/paper/{attention.pk}/change/"' in page
    assert "Ashish Vaswani, Noam Shazeer, Niki Parmar et al. · NEURIPS · 2017" in page
    assert "Jakob Uszkoreit" not in page
    row = page[page.index(f"/{attention.pk}/read/") :]
    assert row.index("result-pdf") < row.index("</tr>")
    retracted_row = page[page.index(f"/{retracted.pk}/read/") :]
    assert 'result-retraction">Retracted</span>' in retracted_row[: retracted_row.index("</tr>")]
    assert "result-passage" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; Attention hijacked" in page
    assert "<script>alert" not in page
    assert "sortable" not in page  # the sort is chosen above the list, not by a column
    assert 'name="_selected_action"' in page and 'name="action"' in page


def test_the_chosen_sort_orders_the_list_and_keeps_its_filters(
    admin_client: Client, library: dict[str, Paper], make_paper: Callable[..., Paper]
) -> None:
    undated = make_paper("Attention without a date", year=None, authors=["Nobody"])
    attention, retracted, hostile = library["attention"], library["retracted"], library["hostile"]
    page = admin_client.get(CHANGELIST).content.decode()
    newest = admin_client.get(CHANGELIST + sort_url(page, "Newest").replace("&amp;", "&"))
    assert listed(newest.content.decode()) == [hostile.pk, attention.pk, retracted.pk, undated.pk]
    assert sort_links(newest.content.decode())[1] == ("Newest", True)
    by_title = admin_client.get(CHANGELIST, {"sort": "title"}).content.decode()
    # Case and markup folded (title_key): "<script>..." files under "script".
    assert listed(by_title) == [attention.pk, undated.pk, retracted.pk, hostile.pk]
    # A filter keeps the sort, and the sort's links keep the filter.
    filtered = admin_client.get(CHANGELIST, {"sort": "newest", "year": "2010-2018"})
    assert filtered.status_code == 200 and "?e=1" not in filtered.get("Location", "")
    page = filtered.content.decode()
    assert listed(page) == [attention.pk, retracted.pk]
    assert "year=2010-2018" in sort_url(page, "Title")
    assert '<input type="hidden" name="sort" value="newest">' in page  # the venue box's form
    # An unknown sort is the default order, not an error.
    unknown = admin_client.get(CHANGELIST, {"sort": "colour"}).content.decode()
    assert listed(unknown)[0] == undated.pk
    assert sort_links(unknown)[0] == ("Recently added", True)


def test_a_search_can_be_sorted_and_a_new_search_starts_by_relevance(
    admin_client: Client, library: dict[str, Paper]
) -> None:
    relevant = listed(admin_client.get(CHANGELIST, {"q": "attention images"}).content.decode())
    response = admin_client.get(CHANGELIST, {"q": "attention images", "sort": "newest"})
    page = response.content.decode()
    years = {paper.pk: paper.year or 0 for paper in library.values()}
    assert sorted(listed(page)) == sorted(relevant)
    assert [years[pk] for pk in listed(page)] == sorted(
        (years[pk] for pk in relevant), reverse=True
    )
    assert ("Newest", True) in sort_links(page)
    assert "q=attention+images" in sort_url(page, "Relevance")
    assert "<mark>" in page  # still the search's passages
    # The search box does not carry the sort into the next search.
    search_form = page[page.index('id="changelist-search"') : page.index("</form>")]
    assert 'name="sort"' not in search_form


def test_an_unsearched_page_costs_the_same_queries_at_any_length(
    admin_client: Client, make_paper: Callable[..., Paper]
) -> None:
    def queries() -> int:
        admin_client.get(CHANGELIST)
        with CaptureQueriesContext(connection) as captured:
            assert admin_client.get(CHANGELIST, {"sort": "newest"}).status_code == 200
        return len(captured.captured_queries)

    for n in range(3):
        make_paper(f"Paper {n}", authors=[f"A {n}"], year=2001)
    few = queries()
    for n in range(12):
        make_paper(f"Study {n}", authors=[f"Author {n}", "B", "C", "D"], year=2002,
                   keywords=["k"])  # fmt: skip
    assert queries() == few


def test_a_searched_page_costs_the_same_queries_at_any_length(
    admin_client: Client, make_paper: Callable[..., Paper], search_caches_held: None
) -> None:
    def queries() -> int:
        admin_client.get(CHANGELIST, {"q": "attention"})  # warm caches (vocabulary, session)
        with CaptureQueriesContext(connection) as captured:
            assert admin_client.get(CHANGELIST, {"q": "attention"}).status_code == 200
        return len(captured)

    for n in range(3):  # enough exact matches that no typo-tolerant search is added
        make_paper(f"Attention paper {n}", authors=[f"A {n}"], year=2001)
    few = queries()
    for n in range(12):
        make_paper(f"Attention study {n}", authors=[f"Author {n}", "B", "C", "D"], year=2002)
    assert queries() == few


@pytest.mark.parametrize("listing", ["?q=attention", "?sort=title"])
def test_a_bulk_action_still_acts_on_the_list(
    admin_client: Client, library: dict[str, Paper], listing: str
) -> None:
    response = admin_client.post(
        CHANGELIST + listing,
        {"action": "add_keywords", "_selected_action": [library["attention"].pk],
         "keywords": "transformers", "apply": "1"},
    )  # fmt: skip
    assert response.status_code in (200, 302)
    assert list(library["attention"].keywords.values_list("name", flat=True)) == ["transformers"]

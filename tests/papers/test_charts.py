"""Charts you can read and click (issue 21, item 4): the year chart keeps to the populated
years with the sparse early tail folded into one column, venues show their short names with
the full name on hover, and every bar is a link to the project's papers it counts."""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse

from papers.charts import Bar, bar_chart, column_chart, fold_timeline
from papers.models import Paper, Venue
from projects.models import Project
from projects.services import project_add_papers

pytestmark = pytest.mark.django_db


def test_a_stray_old_year_is_folded_into_one_column() -> None:
    years = [(1805, 1)] + [(year, 0) for year in range(1806, 2000)] + [
        (year, 20) for year in range(2000, 2024)
    ]  # fmt: skip
    columns = fold_timeline(years)
    assert columns[0] == ("before 2000", 1, 1805, 1999)
    assert [label for label, *_ in columns[1:]] == [str(year) for year in range(2000, 2024)]
    assert sum(count for _, count, *_ in columns) == 1 + 24 * 20


def test_a_long_populated_timeline_keeps_at_most_sixty_columns() -> None:
    years = [(year, 5) for year in range(1900, 2024)]
    columns = fold_timeline(years, max_bars=60)
    assert len(columns) == 60 and columns[0][0] == "before 1965" and columns[-1][0] == "2023"
    assert sum(count for _, count, *_ in columns) == 5 * len(years)


def test_a_short_timeline_is_left_alone() -> None:
    years = [(2019, 3), (2020, 0), (2021, 4)]
    assert fold_timeline(years) == [("2019", 3, 2019, 2019), ("2020", 0, 2020, 2020),
                                    ("2021", 4, 2021, 2021)]  # fmt: skip
    assert fold_timeline([]) == []


def test_bars_link_and_name_their_papers_on_hover() -> None:
    svg = bar_chart([Bar("ACL", 3, name="Annual Meeting of the ACL", href="/x?venue=A&b=1")],
                    title="Venues")  # fmt: skip
    assert '<a href="/x?venue=A&amp;b=1">' in svg
    assert "<title>Annual Meeting of the ACL: 3 papers</title>" in svg and ">ACL</text>" in svg
    column = column_chart([Bar("2020", 0, href="/y?year=2020")], title="Years")
    assert '<a href="/y?year=2020">' in column  # a year without papers is still a target


@pytest.fixture
def project(make_paper: Callable[..., Paper], make_project: Callable[..., Project]) -> Project:
    project = make_project("Parsing")
    papers = [make_paper("A letter on grammar", authors=["Old Author"], year=1805)]
    for year in range(2005, 2021):
        for number in range(6):
            papers.append(make_paper(
                f"Parsing paper {year}-{number}", year=year, venue="Annual Meeting of the ACL",
                authors=["Jane Parser" if number == 0 else f"Other {year} {number}"],
            ))  # fmt: skip
    Venue.objects.filter(name="Annual Meeting of the ACL").update(short_name="acl")
    project_add_papers(project=project, paper_ids=[paper.pk for paper in papers])
    return project


def links(svg: str) -> dict[str, str]:
    """Each link's target -> the hover title inside it."""
    found = re.findall(r'<a href="([^"]+)">.*?<title>([^<]+)</title>', svg)
    return {unescape(href): unescape(title) for href, title in found}


def chart(page: str, kind: str) -> str:
    return page.split(f'id="chart-{kind}"')[1].split("</svg>")[0]


def test_the_trends_page_charts_lead_to_the_papers_they_count(
    admin_client: Client, project: Project
) -> None:
    response = admin_client.get(reverse("admin:projects_project_trends", args=[project.pk]))
    page = response.content.decode()
    papers_url = reverse("admin:projects_project_papers", args=[project.pk])

    years = links(chart(page, "timeline"))
    assert years[f"{papers_url}?year=1805-2004"] == "1805–2004: 1 paper"
    assert years[f"{papers_url}?year=2012"] == "2012: 6 papers"
    assert len(years) == 17  # the folded tail and 2005-2020, not 216 years

    venues = chart(page, "venues")
    assert ">ACL</text>" in venues
    assert "Annual Meeting of the ACL: 96 papers" in unescape(venues)

    authors = links(chart(page, "authors"))
    jane = next(href for href, title in authors.items() if title.startswith("Jane Parser"))
    listed = admin_client.get(jane).content.decode()
    assert len(set(re.findall(r"Parsing paper \d{4}-0", listed))) == 16
    assert not re.findall(r"Parsing paper \d{4}-[1-5]", listed)

    year_list = admin_client.get(f"{papers_url}?year=2012").content.decode()
    assert len(set(re.findall(r"Parsing paper 2012-\d", year_list))) == 6
    assert "Parsing paper 2013" not in year_list
    tail = admin_client.get(f"{papers_url}?year=1805-2004").content.decode()
    assert "A letter on grammar" in tail and "Parsing paper" not in tail


# --- actions that act where they are shown (issue 21, item 3) ---------------------------------


def action_names(page: str) -> list[str]:
    select = page.split('name="action"')[1].split("</select>")[0]
    return re.findall(r'<option value="(\w+)"', select)


def test_project_pages_offer_no_library_wide_delete(admin_client: Client, project: Project) -> None:
    papers_page = admin_client.get(reverse("admin:projects_project_papers", args=[project.pk]))
    names = action_names(papers_page.content.decode())
    assert names[0] == "remove_from_project" and "delete_selected" not in names
    picker = admin_client.get(reverse("admin:projects_project_add_papers", args=[project.pk]))
    assert action_names(picker.content.decode()) == ["add_to_this_project"]


def test_the_library_list_deletes_last_and_asks_with_the_count(
    admin_client: Client, project: Project
) -> None:
    names = action_names(admin_client.get("/admin/papers/paper/").content.decode())
    assert names[-1] == "delete_selected" and names[0] != "delete_selected"
    ids = list(Paper.objects.order_by("pk").values_list("pk", flat=True)[:3])
    asked = admin_client.post(
        "/admin/papers/paper/", {"action": "delete_selected", "_selected_action": ids}
    ).content.decode()
    assert "Are you sure" in asked and "Papers: 3" in asked
    assert Paper.objects.filter(pk__in=ids).count() == 3  # nothing deleted before the yes


# --- venues: the same venue one bar, distinct venues distinct (issue 36, item 7) -------------


def test_editions_of_one_venue_are_one_bar_and_distinct_venues_stay_apart(
    admin_client: Client, make_paper: Callable[..., Paper], make_project: Callable[..., Project]
) -> None:
    editions = {
        "Proceedings of the 60th Annual Meeting of the ACL (Volume 1: Long Papers)": ("acl", 3),
        "Proceedings of the 61st Annual Meeting of the ACL (Volume 2: Short Papers)": ("acl", 2),
        "Proceedings of the Seventh Conference on Machine Translation (WMT)": ("wmt", 2),
        "Proceedings of the Eighth Conference on Machine Translation (WMT)": ("wmt", 2),
        "Findings of the Association for Computational Linguistics: ACL 2023": ("findings", 1),
        "Workshop on Oracle Parsing": ("", 1),  # its name contains "acl": not in ACL's bar
    }
    papers = []
    for venue, (short, count) in editions.items():
        for number in range(count):
            papers.append(make_paper(f"{venue} paper {number}", venue=venue, year=2023))
        Venue.objects.filter(name=venue).update(short_name=short)
    project = make_project("MT")
    project_add_papers(project=project, paper_ids=[paper.pk for paper in papers])

    page = admin_client.get(reverse("admin:projects_project_trends", args=[project.pk]))
    venues = chart(page.content.decode(), "venues")
    labels = re.findall(r'class="bar-label".*?</title>([^<]+)</text>', venues)
    assert labels == ["ACL", "WMT", "FINDINGS", "Workshop on Oracle Parsing"]
    hovers = links(venues)
    papers_url = reverse("admin:projects_project_papers", args=[project.pk])
    acl = hovers[f"{papers_url}?venue=acl"]
    assert acl.startswith("Proceedings of the 60th Annual Meeting of the ACL (Volume 1")
    assert acl.endswith("and 1 more edition(s): 5 papers")
    # The bar's link lists every edition of the series and nothing else.
    listed = admin_client.get(f"{papers_url}?venue=acl").content.decode()
    assert listed.count("Annual Meeting of the ACL") >= 5
    assert "Oracle Parsing paper" not in listed and "Findings of the" not in listed


def test_a_chart_of_links_is_a_group_and_one_without_is_an_image() -> None:
    """An image's content is hidden from assistive technology, so links inside one are lost
    (axe-core's nested-interactive): a chart whose bars are links is a group."""
    linked = column_chart([Bar("2019", 3, href="/admin/?year=2019")], title="Papers by year")
    plain = bar_chart([Bar("ACL", 2)], title="Venues")
    assert re.search(r'<svg [^>]*role="group"', linked) and '<a href="' in linked
    assert re.search(r'<svg [^>]*role="img"', plain) and "<a " not in plain

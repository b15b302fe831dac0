"""The admin as the curation UI: a project's papers page, the library picker, bulk actions,
trends charts, and who may do what (Curators curate, Readers only look)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from papers import curation
from papers.admin import EstimatedCountPaginator
from papers.models import Paper, PaperEmbedding
from papers.schemas import PaperRecord
from papers.search import admin_search
from papers.services import papers_upsert
from projects import curation as projects_curation
from projects.models import Project, ProjectPaper
from projects.services import project_add_papers, project_create

pytestmark = pytest.mark.django_db


def staff_client(username: str, group: str) -> Client:
    user = User.objects.create_user(username, password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name=group))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def curator() -> Client:
    return staff_client("curator", "Curators")


@pytest.fixture
def reader() -> Client:
    return staff_client("reader", "Readers")


@pytest.fixture
def library(make_paper: Callable[..., Paper]) -> dict[str, Paper]:
    return {
        "attention": make_paper("Attention Is All You Need", authors=["Ashish Vaswani"],
                                year=2017, venue="NeurIPS", keywords=["transformers"]),
        "bert": make_paper("BERT: Pre-training of Deep Bidirectional Transformers",
                           authors=["Jacob Devlin"], year=2019, venue="NAACL",
                           doi="10.18653/v1/N19-1423"),
        "gpt3": make_paper("Language Models are Few-Shot Learners", authors=["Tom Brown"],
                           year=2020, venue="NeurIPS", pdf_url="http://127.0.0.1:9/gpt3.pdf"),
        "resnet": make_paper("Deep Residual Learning for Image Recognition",
                             authors=["Kaiming He"], year=2016, venue="CVPR"),
    }  # fmt: skip


@pytest.fixture
def project(library: dict[str, Paper]) -> Project:
    created = project_create(name="Language Models")
    project_add_papers(
        project=created, paper_ids=[library[k].pk for k in ("attention", "bert", "gpt3")]
    )
    return created


def papers_url(project: Project) -> str:
    return reverse("admin:projects_project_papers", args=[project.pk])


def titles(response: Any) -> set[str]:
    return {paper.title.split(":")[0] for paper in response.context["cl"].result_list}


def members(project: Project) -> set[str]:
    return set(ProjectPaper.objects.filter(project=project).values_list("paper__title", flat=True))


def act(client: Client, url: str, action: str, papers: list[Paper], **fields: str) -> Any:
    data = {"action": action, "_selected_action": [p.pk for p in papers], **fields}
    return client.post(url, data, follow=True)


def messages_of(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]]


# --- the project's papers page ---------------------------------------------------------------


def test_project_page_lists_only_its_papers_and_searches_and_filters_them(
    curator: Client, project: Project
) -> None:
    url = papers_url(project)
    response = curator.get(url)
    assert response.status_code == 200
    assert titles(response) == {"Attention Is All You Need", "BERT", "Language Models are "
                                "Few-Shot Learners"}  # fmt: skip
    assert "Papers in Language Models" in response.content.decode()
    assert titles(curator.get(url, {"q": "transformers"})) == {"Attention Is All You Need", "BERT"}
    assert titles(curator.get(url, {"year": "2018-2020"})) == {
        "BERT", "Language Models are Few-Shot Learners"}  # fmt: skip
    assert titles(curator.get(url, {"venue": "naacl"})) == {"BERT"}
    assert titles(curator.get(url, {"keyword": "Transformers"})) == {"Attention Is All You Need"}
    # A resnet search finds nothing: the paper is in the library but not in the project.
    assert titles(curator.get(url, {"q": "residual"})) == set()


def test_project_search_finds_its_papers_however_many_library_papers_match(
    curator: Client, make_paper: Callable[..., Paper], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The library-wide search keeps ADMIN_SEARCH_MAX_HITS hits; the project's runs inside it.
    monkeypatch.setattr(admin_search, "ADMIN_SEARCH_MAX_HITS", 2)
    monkeypatch.setattr(projects_curation, "ADMIN_SEARCH_MAX_HITS", 2)
    papers = [make_paper(f"Translation study {n}", authors=[f"Ann Author{n}"]) for n in range(4)]
    late = project_create(name="Late")
    project_add_papers(project=late, paper_ids=[papers[0].pk, papers[3].pk])
    url = papers_url(late)
    assert titles(curator.get(url, {"q": "translation"})) == {
        "Translation study 0", "Translation study 3"}  # fmt: skip
    assert titles(curator.get(url, {"q": papers[3].citekey})) == {"Translation study 3"}
    assert titles(curator.get(url, {"q": str(papers[3].pk)})) == {"Translation study 3"}
    # An unbalanced quote is dropped: 'study 3' as plain words, never an error.
    assert "Translation study 3" in titles(curator.get(url, {"q": '"study 3'}))


def test_project_page_paginates(curator: Client) -> None:
    records = [PaperRecord.build(title=f"Paper number {n}", year=2000 + n % 20) for n in range(57)]
    outcome = papers_upsert(records=records)
    big = project_create(name="Big")
    project_add_papers(project=big, paper_ids=outcome.paper_ids)
    first = curator.get(papers_url(big))
    second = curator.get(papers_url(big), {"p": "2"})
    assert len(first.context["cl"].result_list) == 50
    assert len(second.context["cl"].result_list) == 7
    assert first.context["cl"].result_count == 57


def test_project_page_of_an_unknown_project_is_404(curator: Client) -> None:
    assert curator.get(reverse("admin:projects_project_papers", args=["nope"])).status_code == 404
    assert curator.get(reverse("admin:projects_project_trends", args=["nope"])).status_code == 404


def test_pages_need_login(client: Client, project: Project) -> None:
    for url in (papers_url(project), reverse("admin:projects_project_trends", args=[project.pk]),
                reverse("admin:papers_paper_import_bibtex")):  # fmt: skip
        response = client.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_library_picker_lists_papers_outside_the_project_and_adds_them(
    curator: Client, project: Project, library: dict[str, Paper]
) -> None:
    url = reverse("admin:projects_project_add_papers", args=[project.pk])
    listed = curator.get(url)
    assert titles(listed) == {"Deep Residual Learning for Image Recognition"}
    assert titles(curator.get(url, {"q": "attention"})) == set()
    response = act(curator, url, "add_to_this_project", [library["resnet"]])
    assert response.redirect_chain[-1][0] == papers_url(project)
    assert "1 papers added" in " ".join(messages_of(response))
    assert len(members(project)) == 4


def test_remove_action_takes_papers_out_of_the_project_only(
    curator: Client, project: Project, library: dict[str, Paper]
) -> None:
    response = act(curator, papers_url(project), "remove_from_project", [library["bert"]])
    assert "1 papers removed" in " ".join(messages_of(response))
    assert "BERT: Pre-training of Deep Bidirectional Transformers" not in members(project)
    assert Paper.objects.filter(pk=library["bert"].pk).exists()


def test_move_and_copy_to_another_project(
    curator: Client, project: Project, library: dict[str, Paper]
) -> None:
    other = project_create(name="Reading list")
    url = papers_url(project)
    act(curator, url, "add_to_project", [library["attention"]], project="Reading list")
    assert members(other) == {"Attention Is All You Need"}
    assert "Attention Is All You Need" in members(project)  # a copy
    act(curator, url, "move_to_project", [library["bert"]], project=other.pk)
    assert len(members(other)) == 2
    assert "BERT: Pre-training of Deep Bidirectional Transformers" not in members(project)


@pytest.mark.parametrize(
    ("action", "target", "message"),
    [
        ("move_to_project", "", "project_id cannot be empty"),
        ("move_to_project", "No such project", "No project 'No such project'"),
        ("move_to_project", "language-models", "in that project already"),
        ("add_to_project", "nowhere", "No project 'nowhere'"),
    ],
)
def test_membership_actions_report_bad_input_and_change_nothing(
    curator: Client, project: Project, library: dict[str, Paper], action: str, target: str,
    message: str,
) -> None:  # fmt: skip
    response = act(curator, papers_url(project), action, [library["bert"]], project=target)
    assert any(message in text for text in messages_of(response)), messages_of(response)
    assert len(members(project)) == 3


def test_keyword_actions_on_the_project_page(
    curator: Client, project: Project, library: dict[str, Paper]
) -> None:
    url = papers_url(project)
    chosen = [library["bert"], library["gpt3"]]

    def keywords(paper: Paper) -> list[str]:
        return sorted(paper.keywords.values_list("name", flat=True))

    act(curator, url, "set_keywords", chosen, keywords="to read, survey")
    assert keywords(library["bert"]) == keywords(library["gpt3"]) == ["survey", "to read"]
    act(curator, url, "add_keywords", chosen, keywords="llm")
    act(curator, url, "remove_keywords", chosen, keywords="survey")
    assert keywords(library["gpt3"]) == ["llm", "to read"]
    response = act(curator, url, "add_keywords", chosen, keywords="")
    assert any("Name at least one keyword" in m for m in messages_of(response))
    # The list shows the keywords of each paper.
    assert "llm, to read" in curator.get(url).content.decode()


@pytest.mark.parametrize(
    ("action", "content_type", "extension", "marker"),
    [
        ("export_bibtex", "application/x-bibtex", "bib", "@article{"),
        ("export_csv", "text/csv", "csv", "paper_id,id,citekey,title"),
        ("export_ris", "application/x-research-info-systems", "ris", "TY  - "),
    ],
)
def test_exports_download_the_selected_papers(
    curator: Client, project: Project, library: dict[str, Paper], action: str,
    content_type: str, extension: str, marker: str,
) -> None:  # fmt: skip
    chosen = [library["attention"], library["bert"]]
    response = curator.post(
        papers_url(project), {"action": action, "_selected_action": [p.pk for p in chosen]}
    )
    assert response.status_code == 200
    assert response["Content-Type"].startswith(content_type)
    assert response["Content-Disposition"] == f'attachment; filename="language-models.{extension}"'
    body = response.content.decode()
    assert marker in body
    assert library["attention"].citekey in body and library["bert"].citekey in body
    assert library["gpt3"].citekey not in body


def test_select_all_across_acts_on_the_filtered_project_list(
    curator: Client, project: Project, library: dict[str, Paper]
) -> None:
    response = curator.post(
        papers_url(project) + "?venue=neurips",
        {"action": "export_bibtex", "select_across": "1", "index": "0",
         "_selected_action": [library["attention"].pk]},
    )  # fmt: skip
    body = response.content.decode()
    assert body.count("\n@") + body.startswith("@") == 2
    assert library["bert"].citekey not in body


def test_fetch_pdfs_queues_papers_with_a_pdf_url(
    curator: Client, project: Project, library: dict[str, Paper], settings: Any
) -> None:
    settings.PDF_ALLOW_PRIVATE_URLS = False  # the URL is refused: no network in this test
    settings.CELERY_TASK_ALWAYS_EAGER = True
    response = act(curator, papers_url(project), "download_pdfs",
                   [library["gpt3"], library["bert"]])  # fmt: skip
    assert any("1 of 2 papers have a pdf_url" in m for m in messages_of(response))


def test_fetch_pdfs_without_a_worker_refuses_a_long_list(
    curator: Client, settings: Any, monkeypatch: pytest.MonkeyPatch, library: dict[str, Paper]
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    monkeypatch.setattr(curation, "INLINE_DOWNLOADS_MAX", 2)
    response = act(curator, reverse("admin:papers_paper_changelist"), "download_pdfs",
                   list(library.values()))  # fmt: skip
    assert any("select at most 2 papers" in m for m in messages_of(response))


def test_reembed_embeds_the_selected_papers(
    curator: Client, project: Project, library: dict[str, Paper], settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    settings.CELERY_TASK_ALWAYS_EAGER = True
    PaperEmbedding.objects.all().delete()
    with django_capture_on_commit_callbacks(execute=True):
        response = act(curator, papers_url(project), "reembed", [library["bert"]])
    assert any("1 papers embedded" in m for m in messages_of(response))
    assert list(PaperEmbedding.objects.values_list("paper_id", flat=True)) == [library["bert"].pk]


def test_reembed_says_when_embeddings_are_off(
    curator: Client, library: dict[str, Paper], settings: Any
) -> None:
    settings.EMBEDDINGS_ENABLED = False
    response = act(curator, reverse("admin:papers_paper_changelist"), "reembed",
                   [library["bert"]])  # fmt: skip
    assert any("turned off" in m for m in messages_of(response))


def test_an_oversized_selection_is_refused(
    curator: Client, project: Project, library: dict[str, Paper], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(curation, "MAX_SELECTION", 2)
    response = act(curator, papers_url(project), "set_keywords", list(library.values())[:3],
                   keywords="x")  # fmt: skip
    assert any("Select at most 2 papers" in m for m in messages_of(response))
    assert not library["attention"].keywords.filter(name="x").exists()


# --- trends ------------------------------------------------------------------------------------


def test_trends_page_draws_years_authors_venues_and_keywords(
    curator: Client, project: Project
) -> None:
    response = curator.get(reverse("admin:projects_project_trends", args=[project.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart') == 4
    timeline = page.split('id="chart-timeline"')[1].split("</svg>")[0]
    for year in ("2017", "2018", "2019", "2020"):
        assert f">{year}</text>" in timeline
    assert "2018: 0 papers" in timeline and "2019: 1 paper<" in timeline
    assert "Jacob Devlin" in page and "NeurIPS: 2 papers" in page and "transformers" in page
    assert "3 papers, 2017–2020" in page


def test_trends_of_an_empty_project_say_no_data(curator: Client) -> None:
    empty = project_create(name="Empty")
    page = curator.get(reverse("admin:projects_project_trends", args=[empty.pk])).content
    assert page.decode().count("No data") == 4


# --- project admin ------------------------------------------------------------------------------


def test_creating_a_project_leads_to_its_papers_page(curator: Client) -> None:
    response = curator.post(reverse("admin:projects_project_add"),
                            {"name": "Efficient Transformers", "description": "Speed"})  # fmt: skip
    assert response.status_code == 302
    assert response["Location"] == reverse(
        "admin:projects_project_papers", args=["efficient-transformers"]
    )


def test_project_list_and_change_page_link_to_papers_and_trends(
    curator: Client, project: Project
) -> None:
    listing = curator.get(reverse("admin:projects_project_changelist")).content.decode()
    change = curator.get(reverse("admin:projects_project_change", args=[project.pk]))
    for page in (listing, change.content.decode()):
        assert papers_url(project) in page
        assert reverse("admin:projects_project_trends", args=[project.pk]) in page


# --- permissions -------------------------------------------------------------------------------


def test_readers_browse_and_export_but_are_offered_no_write_action(
    reader: Client, project: Project, library: dict[str, Paper]
) -> None:
    for url in (papers_url(project), reverse("admin:projects_project_trends", args=[project.pk]),
                reverse("admin:papers_paper_changelist"),
                reverse("admin:papers_paper_change", args=[library["bert"].pk])):  # fmt: skip
        assert reader.get(url).status_code == 200, url
    offered = {
        name for name, _ in reader.get(papers_url(project)).context["action_form"]
        .fields["action"].choices if name
    }  # fmt: skip
    assert offered == {"export_bibtex", "export_csv", "export_ris"}
    response = reader.post(
        papers_url(project), {"action": "export_bibtex", "_selected_action": [library["bert"].pk]}
    )
    assert response["Content-Type"].startswith("application/x-bibtex")  # fmt: skip


@pytest.mark.parametrize(
    ("action", "fields"),
    [
        ("remove_from_project", {}),
        ("set_keywords", {"keywords": "hacked"}),
        ("move_to_project", {"project": "other"}),
        ("reembed", {}),
    ],
)
def test_readers_cannot_run_write_actions(
    reader: Client, project: Project, library: dict[str, Paper], action: str,
    fields: dict[str, str],
) -> None:  # fmt: skip
    project_create(name="other")
    act(reader, papers_url(project), action, [library["bert"]], **fields)
    assert len(members(project)) == 3
    assert not library["bert"].keywords.exists()


def test_readers_cannot_open_the_adding_pages(reader: Client, project: Project) -> None:
    for url in (
        reverse("admin:projects_project_add_papers", args=[project.pk]),
        reverse("admin:papers_paper_add_by_identifier"),
        reverse("admin:papers_paper_import_bibtex"),
    ):
        assert reader.get(url).status_code == 403, url
    assert reader.post(reverse("admin:papers_paper_import_bibtex"),
                       {"text": "@article{a, title={A}}"}).status_code == 403  # fmt: skip


def test_groups_grant_view_to_readers_and_everything_to_curators() -> None:
    readers = set(Group.objects.get(name="Readers").permissions.values_list("codename", flat=True))
    curators = set(
        Group.objects.get(name="Curators").permissions.values_list("codename", flat=True)
    )
    assert {"view_paper", "view_project", "view_keyword", "view_annotation"} <= readers
    assert all(codename.startswith("view_") for codename in readers)
    assert {"add_paper", "change_paper", "delete_paper", "change_project"} <= curators


def test_staff_outside_the_groups_see_nothing(project: Project) -> None:
    user = User.objects.create_user("bare", password="pw", is_staff=True)
    client = Client()
    client.force_login(user)
    assert client.get(papers_url(project)).status_code == 403
    assert client.get(reverse("admin:papers_paper_changelist")).status_code == 403


# --- speed: no query per row ---------------------------------------------------------------------


def queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_lists_cost_the_same_queries_for_3_or_40_papers(
    curator: Client, search_caches_held: None
) -> None:
    few = project_create(name="Few")
    many = project_create(name="Many")
    records = [
        PaperRecord.build(title=f"Study {n}", authors=[f"Author {n}"], year=2010 + n % 10,
                          venue=f"Venue {n % 3}", keywords=[f"k{n}", "shared"])
        for n in range(43)
    ]  # fmt: skip
    ids = papers_upsert(records=records).paper_ids
    project_add_papers(project=few, paper_ids=ids[:3])
    project_add_papers(project=many, paper_ids=ids[3:])
    queries(curator, papers_url(few))  # warm caches (content types, sessions)
    assert queries(curator, papers_url(few)) == queries(curator, papers_url(many))
    changelist = reverse("admin:papers_paper_changelist")
    queries(curator, changelist + "?q=study+1")  # warm the search statistics' cache
    assert queries(curator, changelist + "?q=study+1") == queries(curator, changelist + "?q=study")


def test_source_filter_offers_each_source_once(
    curator: Client, make_paper: Callable[..., Paper]
) -> None:
    for n, source in enumerate(["zotero", "acl", "acl", "arxiv", "acl"]):
        make_paper(f"Paper {n}", source=source, authors=[f"Writer {n}"])
    response = curator.get(reverse("admin:papers_paper_changelist"))
    source_filter = next(f for f in response.context["cl"].filter_specs if f.title == "source")
    assert [value for value, _ in source_filter.lookup_choices] == ["acl", "arxiv", "zotero"]
    filtered = curator.get(reverse("admin:papers_paper_changelist"), {"source": "arxiv"})
    assert titles(filtered) == {"Paper 3"}


def test_the_unfiltered_library_is_not_counted_on_postgresql(
    curator: Client, library: dict[str, Paper], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(EstimatedCountPaginator, "ESTIMATE_FROM", 1)
    postgresql = connection.vendor == "postgresql"
    if postgresql:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE papers_paper")  # the estimate the planner keeps
    url = reverse("admin:papers_paper_changelist")
    with CaptureQueriesContext(connection) as captured:
        response = curator.get(url)
    # The list's counts (the rows' records count each paper's annotations: not these).
    counts = [
        q["sql"] for q in captured.captured_queries
        if q["sql"].lstrip().upper().startswith("SELECT COUNT(")
    ]  # fmt: skip
    assert response.context["cl"].result_count == 4
    assert len(counts) == (0 if postgresql else 1)
    with CaptureQueriesContext(connection) as captured:
        response = curator.get(url, {"year": "2017"})
    assert response.context["cl"].result_count == 1
    assert any("COUNT(" in q["sql"].upper() for q in captured.captured_queries)


def test_search_rank_orders_any_number_of_papers_as_ranked(db: None) -> None:
    """with_search_rank gives each paper its place in the ranking (0 when not ranked), on
    either database, for rankings of thousands of ids."""
    outcome = papers_upsert(records=[PaperRecord.build(title=f"Ranked {n}") for n in range(30)])
    ids = list(outcome.paper_ids)
    ranking = [*ids[:25][::-1], *range(10**6, 10**6 + 5000)]  # unknown ids in the ranking too
    ranked = admin_search.with_search_rank(Paper.objects.filter(pk__in=ids), ranking)
    places = dict(ranked.values_list("pk", admin_search.SEARCH_RANK))
    assert places == {pk: (25 - ids.index(pk) if pk in ids[:25] else 0) for pk in ids}
    ordered = ranked.order_by(admin_search.SEARCH_RANK, "-pk")
    assert list(ordered.values_list("pk", flat=True)) == [*ids[25:][::-1], *ids[:25][::-1]]


def test_the_selection_box_is_djangos_own(make_paper: Callable[..., Paper]) -> None:
    """The paper lists write the row's selection box themselves (speed): byte for byte what
    Django's ModelAdmin.action_checkbox renders, a title needing escapes included."""
    from django.contrib import admin as django_admin

    from papers.admin import PaperAdmin

    paper = make_paper('Tom & Jerry: "<b>Quotes</b>" in titles', authors=["A. Author"])
    model_admin = PaperAdmin(Paper, django_admin.site)
    ours = model_admin.action_checkbox(paper)
    assert ours == django_admin.ModelAdmin.action_checkbox(model_admin, paper)
    assert f'value="{paper.pk}"' in ours and "&lt;b&gt;" in ours

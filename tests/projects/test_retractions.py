"""The retraction watch (issue 24 item 3) against Crossref and OpenAlex served locally in
the shapes they document (tests/fixtures/retractions, see SOURCE.txt): a retraction found
through the notice's `update-to` flags the paper in its record, in search results, in the
exports, in the admin's "Retracted" filter, and alerts every project holding it; an engine
that fails leaves the paper unchecked, never clean.

The engine calls run in this process (a worker would not see the local server's URL);
tests/mcp/test_retraction_tools.py runs the check through the MCP client and a Celery worker.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from engines.crossref import CrossrefEngine
from engines.openalex import OpenAlexEngine
from engines.retractions import papers_due
from papers.bibtex import render_bibtex
from papers.citations.csl import paper_to_csl
from papers.models import Paper
from papers.ris import render_ris
from papers.search.fulltext import paper_search
from papers.selectors import paper_detail, with_relations
from projects.intake import paper_add_by_identifier
from projects.models import Alert, Project
from projects.retractions import retractions_check, retractions_check_due
from projects.services import project_add_papers
from tests.engines.replay import ReplayServer, Reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "retractions"
WORK = "10.1016/s0140-6736(97)11096-0"
NOTICE = "10.1016/s0140-6736(10)60175-4"
CORRECTED = "10.5555/corrected.2023.1"
CLEAN = "10.5555/clean.2020.1"
CHANGELIST = "/admin/papers/paper/"


def fixture(name: str) -> Reply:
    return Reply(200, json.loads((FIXTURES / name).read_text()))


@pytest.fixture
def sources(replay_server: ReplayServer, settings: Any) -> ReplayServer:
    """Crossref and OpenAlex on one local server; by default they know of no notice."""
    settings.ENGINES_ENABLED = ["crossref", "openalex"]
    settings.CROSSREF_API_URL = f"{replay_server.url}/crossref"
    settings.OPENALEX_API_URL = f"{replay_server.url}/openalex"
    settings.CELERY_TASK_ALWAYS_EAGER = True  # a worker would not see this server's URL
    settings.ENGINE_MAX_RETRIES = 0
    replay_server.add("/crossref/works", fixture("crossref_empty.json"))
    replay_server.add("/openalex/works", Reply(200, {"meta": {"count": 0}, "results": []}))
    return replay_server


def crossref_says(server: ReplayServer, *, works: str, notices: str) -> None:
    """Crossref's answers to the check's two requests (filter=doi:..., filter=updates:...)."""

    def answer(request: Any) -> Reply:
        wanted = request.query.get("filter", [""])[0]
        return fixture(notices if wanted.startswith("updates:") else works)

    server.add("/crossref/works", answer)


@pytest.fixture
def wakefield(make_paper: Callable[..., Paper]) -> Paper:
    return make_paper(
        "Ileal-lymphoid-nodular hyperplasia, non-specific colitis, and pervasive "
        "developmental disorder in children",
        authors=["Andrew J. Wakefield", "Simon H. Murch"],
        year=1998,
        venue="The Lancet",
        doi=WORK,
    )


@pytest.fixture
def clean(make_paper: Callable[..., Paper]) -> Paper:
    return make_paper("Colitis in children revisited", authors=["Jane Doe"], year=2020, doi=CLEAN)


def test_a_retraction_from_a_crossref_update_to_record_flags_the_paper_everywhere(
    sources: ReplayServer,
    wakefield: Paper,
    clean: Paper,
    make_project: Callable[..., Project],
    admin_client: Client,
) -> None:
    # The work's own record has no `updated-by`: only the notice's `update-to` says so.
    crossref_says(
        sources, works="crossref_work_list_plain.json", notices="crossref_notices_update_to.json"
    )
    sources.add("/openalex/works", fixture("openalex_not_retracted.json"))
    gut, autism = make_project("Gut"), make_project("Autism")
    project_add_papers(project=gut, paper_ids=[wakefield.pk, clean.pk])
    project_add_papers(project=autism, paper_ids=[wakefield.pk])

    report = retractions_check(project_ref=gut.id)

    summary = report.summary()
    assert (summary["checked"], summary["failed"]) == (2, 0)
    assert [(p["paper_id"], p["status"], p["notice"]) for p in summary["flagged"]] == [
        (wakefield.pk, "retracted", NOTICE)
    ]
    # What was asked: Crossref both ways, OpenAlex in one OR filter, for both DOIs.
    filters = sorted(r.query["filter"][0] for r in sources.requests if r.path.endswith("/works"))
    assert filters[0].startswith("doi:") and f"doi:{WORK}" in filters[0].split(",")
    assert filters[1] == f"doi:{CLEAN}|{WORK}" or filters[1] == f"doi:{WORK}|{CLEAN}"
    assert f"updates:{WORK}" in filters[2].split(",")

    # The record (get_paper_details).
    record = paper_detail(ref=wakefield.pk)
    assert record["retraction"] == "retracted"
    assert record["retraction_notices"] == [
        {"type": "retraction", "doi": NOTICE, "date": "2010-02-06", "source": "crossref",
         "reported_by": "publisher"}
    ]  # fmt: skip
    assert record["retraction_checked_at"] is not None
    clean_record = paper_detail(ref=clean.pk)
    assert "retraction" not in clean_record and clean_record["retraction_checked_at"]

    # Search results: a short flag on the flagged paper only.
    hits = {hit.record["paper_id"]: hit.record for hit in paper_search(query="colitis").hits}
    assert hits[wakefield.pk]["retraction"] == "retracted"
    assert "retraction" not in hits[clean.pk]

    # Exports: BibTeX note, RIS N1, CSL note.
    papers = list(with_relations(Paper.objects.filter(pk__in=[wakefield.pk, clean.pk])))
    bibtex = render_bibtex(papers)
    assert f"note = {{Retracted: {NOTICE}}}" in bibtex
    assert bibtex.count("note =") == 1
    assert f"N1  - Retracted: {NOTICE}" in render_ris(papers)
    assert paper_to_csl(papers[0])["note"] == f"Retracted: {NOTICE}"

    # The admin: the "Retracted" filter lists it alone; its page shows a badge.
    listed = admin_client.get(CHANGELIST, {"retraction": "any"})
    assert listed.status_code == 200
    assert list(listed.context["cl"].result_list) == [Paper.objects.get(pk=wakefield.pk)]
    assert (
        list(admin_client.get(CHANGELIST, {"retraction": "corrected"}).context["cl"].result_list)
        == []
    )
    page = admin_client.get(f"{CHANGELIST}{wakefield.pk}/change/").content.decode()
    assert "retraction-badge" in page and NOTICE in page
    assert (
        "retraction-badge"
        not in admin_client.get(f"{CHANGELIST}{clean.pk}/change/").content.decode()
    )

    # An alert to every project holding it, once.
    alerts = Alert.objects.filter(paper=wakefield)
    assert sorted((a.kind, a.project_id, a.key) for a in alerts) == sorted(
        ("retraction", project.id, f"retraction:{wakefield.pk}:{project.id}")
        for project in (gut, autism)
    )
    assert all(NOTICE in alert.body for alert in alerts)
    assert not Alert.objects.filter(paper=clean).exists()
    assert summary["alerts_raised"] == 2
    assert retractions_check(project_ref=gut.id).alerts == 0
    assert Alert.objects.count() == 2


def test_updated_by_on_the_work_and_openalex_is_retracted_each_flag_it(
    sources: ReplayServer, wakefield: Paper
) -> None:
    crossref_says(
        sources, works="crossref_work_list_updated_by.json", notices="crossref_empty.json"
    )
    sources.add("/openalex/works", fixture("openalex_is_retracted.json"))

    assert retractions_check_due()["flagged"] == 1

    paper = Paper.objects.get(pk=wakefield.pk)
    assert paper.retraction_status == "retracted"
    assert sorted(n["source"] for n in paper.retraction_notices) == ["crossref", "openalex"]
    # A paper in no project: one alert for the library.
    assert Alert.objects.get(paper=paper).key == f"retraction:{paper.pk}:library"


def test_an_engine_down_leaves_the_paper_unchecked_not_clean(
    sources: ReplayServer, wakefield: Paper
) -> None:
    sources.add("/crossref/works", Reply(503, "Service Unavailable"))
    sources.add("/openalex/works", fixture("openalex_not_retracted.json"))

    summary = retractions_check_due()

    assert (summary["checked"], summary["failed"], summary["flagged"]) == (0, 1, 0)
    paper = Paper.objects.get(pk=wakefield.pk)
    assert paper.retraction_checked_at is None and paper.retraction_status == ""
    assert paper_detail(ref=paper.pk)["retraction_checked_at"] is None
    assert list(papers_due(older_than_days=30)) == [paper]  # still due: asked again next run


def test_a_retraction_found_while_another_engine_is_down_is_kept_and_the_paper_stays_due(
    sources: ReplayServer, wakefield: Paper
) -> None:
    crossref_says(
        sources, works="crossref_work_list_plain.json", notices="crossref_notices_update_to.json"
    )
    sources.add("/openalex/works", Reply(500, "Internal Server Error"))

    summary = retractions_check_due()

    assert (summary["checked"], summary["failed"], summary["flagged"]) == (0, 1, 1)
    paper = Paper.objects.get(pk=wakefield.pk)
    assert paper.retraction_status == "retracted" and paper.retraction_checked_at is None


def test_no_engine_available_checks_nothing(settings: Any, wakefield: Paper) -> None:
    settings.ENGINES_ENABLED = ["local"]
    summary = retractions_check_due()
    assert (summary["checked"], summary["failed"]) == (0, 1)
    assert Paper.objects.get(pk=wakefield.pk).retraction_checked_at is None


def test_an_erratum_raises_a_correction_alert(
    sources: ReplayServer, make_paper: Callable[..., Paper], make_project: Callable[..., Project]
) -> None:
    paper = make_paper("A corrected study", authors=["Ann Author"], year=2023, doi=CORRECTED)
    project = make_project("Errata")
    project_add_papers(project=project, paper_ids=[paper.pk])
    crossref_says(sources, works="crossref_empty.json", notices="crossref_notices_correction.json")

    retractions_check(project_ref=project.id)

    paper.refresh_from_db()
    assert paper.retraction_status == "corrected"
    alert = Alert.objects.get(paper=paper)
    assert (alert.kind, alert.key) == ("correction", f"correction:{paper.pk}:{project.id}")
    bibtex = render_bibtex(with_relations(Paper.objects.filter(pk=paper.pk)))
    assert "note = {Corrected: 10.5555/erratum.2024.7}" in bibtex


def test_a_later_clean_answer_from_every_engine_clears_the_flag(
    sources: ReplayServer, wakefield: Paper
) -> None:
    Paper.objects.filter(pk=wakefield.pk).update(
        retraction_status="corrected",
        retraction_notices=[{"type": "erratum", "doi": "10.5555/x", "source": "crossref"}],
    )
    retractions_check_due()
    paper = Paper.objects.get(pk=wakefield.pk)
    assert (paper.retraction_status, paper.retraction_notices) == ("", [])
    assert paper.retraction_checked_at is not None
    assert list(papers_due(older_than_days=30)) == []


def test_the_limit_leaves_the_rest_for_the_next_run(
    sources: ReplayServer, wakefield: Paper, clean: Paper
) -> None:
    first = retractions_check_due(limit=1)
    assert (first["checked"], first["remaining"]) == (1, 1)
    second = retractions_check_due(limit=1)
    assert (second["checked"], second["remaining"]) == (1, 0)
    assert retractions_check_due()["checked"] == 0


def test_the_management_command_prints_the_counts(
    sources: ReplayServer, wakefield: Paper, capsys: pytest.CaptureFixture[str]
) -> None:
    crossref_says(
        sources, works="crossref_work_list_plain.json", notices="crossref_notices_update_to.json"
    )
    call_command("check_retractions")
    printed = json.loads(capsys.readouterr().out)
    assert (printed["checked"], printed["flagged"], printed["alerts_raised"]) == (1, 1, 1)


# --- the engines' own requests ------------------------------------------------------------


def test_crossref_asks_both_ways_in_one_request_each(sources: ReplayServer, settings: Any) -> None:
    crossref_says(
        sources, works="crossref_work_list_updated_by.json",
        notices="crossref_notices_update_to.json",
    )  # fmt: skip
    answer = CrossrefEngine().get_update_notices([WORK.upper(), CLEAN, "not a doi"])

    assert answer == [
        {"doi": WORK, "notices": [
            {"type": "retraction", "doi": NOTICE, "date": "2010-02-06", "reported_by": "publisher"}
        ]},
        {"doi": CLEAN, "notices": []},
    ]  # fmt: skip
    sent = [r.query for r in sources.requests]
    assert [q["filter"][0] for q in sent] == [
        f"doi:{WORK},doi:{CLEAN}",
        f"updates:{WORK},updates:{CLEAN}",
    ]
    assert [q["select"][0] for q in sent] == ["DOI,updated-by", "DOI,type,update-to"]


def test_openalex_asks_for_is_retracted_in_one_or_filter(sources: ReplayServer) -> None:
    sources.add("/openalex/works", fixture("openalex_is_retracted.json"))

    answer = OpenAlexEngine().get_update_notices([WORK, CLEAN])

    assert answer == [
        {"doi": WORK, "notices": [{"type": "retraction"}]},
        {"doi": CLEAN, "notices": []},
    ]
    (request,) = sources.requests
    assert request.query["filter"] == [f"doi:{WORK}|{CLEAN}"]
    assert request.query["select"] == ["id,doi,is_retracted"]


def test_a_check_is_never_answered_from_the_engine_cache(
    sources: ReplayServer, wakefield: Paper
) -> None:
    retractions_check_due()
    asked = len(sources.requests)
    Paper.objects.filter(pk=wakefield.pk).update(retraction_checked_at=None)
    retractions_check_due()
    assert len(sources.requests) == 2 * asked


# --- on import --------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_adding_a_paper_queues_a_check_that_runs_in_the_background(
    sources: ReplayServer, settings: Any, make_project: Callable[..., Project]
) -> None:
    """add_paper returns without waiting; the check (a thread of this process on the
    embedded default, a Celery task with a broker) flags the paper and alerts its project."""
    settings.RETRACTION_CHECK_ON_IMPORT = True
    settings.ENGINES_ENABLED = ["crossref"]
    work = json.loads((FIXTURES / "crossref_work_list_plain.json").read_text())
    work_message = {
        "status": "ok", "message-type": "work", "message-version": "1.0.0",
        "message": {
            **work["message"]["items"][0], "type": "journal-article",
            "issued": {"date-parts": [[1998]]},
            "title": ["Ileal-lymphoid-nodular hyperplasia, non-specific colitis, and pervasive "
                      "developmental disorder in children"],
        },
    }  # fmt: skip
    sources.add("/crossref/works/10.1016%2Fs0140-6736(97)11096-0", Reply(200, work_message))
    crossref_says(
        sources, works="crossref_work_list_plain.json", notices="crossref_notices_update_to.json"
    )
    project = make_project("Gut")

    added = paper_add_by_identifier(identifier=f"doi:{WORK}", project_ids=[project.id])

    assert added.created
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        paper = Paper.objects.get(pk=added.paper.pk)
        if paper.retraction_checked_at is not None:
            break
        time.sleep(0.1)
    assert (paper.retraction_status, paper.retraction_checked_at is not None) == ("retracted", True)
    key = f"retraction:{paper.pk}:{project.id}"
    deadline = time.monotonic() + 10
    while not Alert.objects.filter(key=key).exists() and time.monotonic() < deadline:
        time.sleep(0.1)  # the alert follows the paper's update in the same task
    assert Alert.objects.filter(key=key).exists()


def test_adding_a_paper_already_in_the_library_queues_nothing(
    sources: ReplayServer, settings: Any, wakefield: Paper
) -> None:
    settings.RETRACTION_CHECK_ON_IMPORT = True
    settings.ENGINES_ENABLED = ["crossref"]
    added = paper_add_by_identifier(identifier=f"doi:{WORK}")
    assert not added.created
    assert sources.requests == []


def test_dois_the_batch_filters_cannot_name_never_block_the_schedule(
    make_paper: Callable[..., Paper],
) -> None:
    """A DOI holding ',' or '|' cannot go into the sources' OR filters: left out of the
    due list, it cannot stay first in line for ever."""
    odd = make_paper("An odd DOI", authors=["Ann Author"], year=2020, doi="10.1000/a,b")
    piped = make_paper("A piped DOI", authors=["Ann Author"], year=2021, doi="10.1000/a|b")
    plain = make_paper("A plain DOI", authors=["Ann Author"], year=2022, doi="10.1000/plain")
    due = list(papers_due(older_than_days=30))
    assert plain in due and odd not in due and piped not in due

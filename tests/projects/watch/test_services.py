"""Saved searches (issue 24, item 1) through the service the tools, the admin, the command
and the scheduler call: only new papers are reported, a failed engine is recorded and its
papers come up on the next run, new papers are filed into the project and ranked by its
screening model, alerts are raised once per run (and mailed), and the in-process scheduler
fires on its own and claims a due search once.

The engines are plugins (tests/engines/plugins.py) calling a local HTTP server whose
answers a test changes between runs; nothing leaves the machine. On the PostgreSQL + Redis
run the engine calls go to the Celery workers, which read the same plugin files.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core import mail
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from core.errors import InvalidInput, NotFound
from engines import breaker, open_access
from engines.base import SEARCH, SearchRequest
from engines.registry import registry
from engines.runner import EngineCall, call_engine
from papers.models import Paper
from papers.scoping import project_ids_for
from projects.alerts import notify
from projects.models import (
    Alert,
    Project,
    ProjectPaper,
    ReviewCandidate,
    ReviewSession,
    SavedSearch,
    SavedSearchRun,
)
from projects.services import project_create
from projects.watch import scheduler
from projects.watch import selectors as watch_selectors
from projects.watch import services as watch_services
from projects.watch.services import saved_search_run, saved_search_save
from tests.engines.plugins import write_plugin
from tests.engines.replay import ReplayServer, Reply, Request


def paper(title: str, **extra: Any) -> dict[str, Any]:
    return {"title": title, "authors": ["Ada Lovelace"], "year": 2024, **extra}


P1 = paper("Sparse attention for long documents", arxiv_id="2401.00001")
P2 = paper("Retrieval augmented generation at scale", doi="10.1234/rag.2024")
P3 = paper("Mixture of experts routing revisited", arxiv_id="2402.00003")
P4 = paper("Evaluating long context language models", doi="10.1234/longctx")
P5 = paper("Speculative decoding for faster inference", arxiv_id="2403.00005")
P6 = paper("Tokenizer-free byte level models", doi="10.1234/bytes")


class Source:
    """What each engine's endpoint answers now; a test changes it between runs. `down`
    engines answer 503 (Service Unavailable) to every call, retries included."""

    def __init__(self, server: ReplayServer) -> None:
        self.server = server
        self.answers: dict[str, list[dict[str, Any]]] = {}
        self.down: set[str] = set()

    def engine(
        self, written: list[Path], prefix: str, answer: list[dict[str, Any]], cache_ttl: int = 0
    ) -> str:
        engine_id = f"{prefix}_{uuid.uuid4().hex[:8]}"
        written.append(
            write_plugin(
                Path(django_settings.ENGINES_DIR),
                engine_id,
                f"{self.server.url}/{engine_id}",
                cache_ttl=cache_ttl,
            )
        )
        self.answers[engine_id] = answer

        def reply(request: Request) -> Reply:
            if engine_id in self.down:
                return Reply(503, {"error": "down for maintenance"})
            return Reply(200, self.answers[engine_id])

        self.server.add(f"/{engine_id}/search", reply)
        return engine_id


@pytest.fixture
def source(settings: Any, replay_server: ReplayServer) -> Iterator[Source]:
    settings.ENGINES_ENABLED = []
    settings.ENGINE_MAX_RETRIES = 0
    written: list[Path] = []
    found = Source(replay_server)
    found.written = written  # type: ignore[attr-defined]
    yield found
    for path in written:
        path.unlink(missing_ok=True)
    registry.refresh()


def engine(source: Source, prefix: str, answer: list[dict[str, Any]], cache_ttl: int = 0) -> str:
    engine_id = source.engine(source.written, prefix, answer, cache_ttl)  # type: ignore[attr-defined]
    registry.refresh()
    return engine_id


def titles(run: SavedSearchRun) -> list[str]:
    by_id = dict(Paper.objects.filter(pk__in=run.new_paper_ids).values_list("pk", "title"))
    return [by_id[pk] for pk in run.new_paper_ids]


def run(name: str) -> SavedSearchRun:
    return saved_search_run(search=SavedSearch.objects.get(name=name))


@pytest.mark.django_db(transaction=True)
def test_a_saved_search_run_twice_reports_only_the_new_papers(
    source: Source, make_paper: Callable[..., Paper]
) -> None:
    make_paper(P4["title"], authors=P4["authors"], year=2024, doi=P4["doi"])  # in the library
    arxivish = engine(source, "arxivish", [P1, P2, P4])
    saved_search_save(name="Long context", query="long context", engines=[arxivish])

    first = run("Long context")
    assert first.status == SavedSearchRun.Status.OK
    # The starting set: the paper already in the library too (the search never reported it).
    assert first.found == 3 and titles(first) == [P1["title"], P2["title"], P4["title"]]

    source.answers[arxivish] = [P3, P1, P2, P4]  # one more paper the second time
    second = run("Long context")
    assert second.found == 4 and titles(second) == [P3["title"]]

    third = run("Long context")
    assert third.new == 0 and third.new_paper_ids == []
    alerts = Alert.objects.filter(kind=Alert.Kind.NEW_PAPERS).order_by("created_at")
    assert [a.key for a in alerts] == [f"new_papers:run:{first.pk}", f"new_papers:run:{second.pk}"]
    assert alerts[0].data["first_run"] is True and "first_run" not in alerts[1].data
    assert alerts[1].data["paper_ids"] == second.new_paper_ids
    assert P3["title"] in alerts[1].body


@pytest.mark.django_db(transaction=True)
def test_an_unreachable_engine_is_recorded_and_its_papers_are_new_on_the_next_run(
    source: Source,
) -> None:
    steady = engine(source, "steady", [P1])
    flaky = engine(source, "flaky", [P1, P2])
    source.down.add(flaky)
    saved_search_save(name="Watch", query="attention", engines=[steady, flaky])

    first = run("Watch")
    assert first.status == SavedSearchRun.Status.PARTIAL
    assert first.engines[steady]["status"] == "ok"
    assert first.engines[flaky]["status"] != "ok" and first.engines[flaky]["count"] == 0
    assert titles(first) == [P1["title"]]
    partial = Alert.objects.get(kind=Alert.Kind.SEARCH_FAILED)
    assert partial.data["failed_engines"] == [flaky] and partial.data["partial"] is True
    flaky_name = flaky.replace("_", " ").title()  # the plugin's display name
    assert partial.title == f"1 of 2 engines failed for saved search 'Watch': {flaky_name}"

    source.down.clear()
    # Its failures opened its circuit breaker (for ENGINE_BREAKER_RESET_SECONDS, shorter
    # than any schedule's period): the next scheduled run finds it closed.
    breaker.reset_all()
    second = run("Watch")
    assert second.status == SavedSearchRun.Status.OK
    assert titles(second) == [P2["title"]]  # not "nothing new": the engine's paper now


@pytest.mark.django_db(transaction=True)
def test_every_engine_failing_raises_a_search_failed_alert(source: Source) -> None:
    down = engine(source, "down", [P1])
    source.down.add(down)
    saved_search_save(name="Dark", query="anything", engines=[down])
    failed = run("Dark")
    assert failed.status == SavedSearchRun.Status.FAILED and failed.new == 0
    alert = Alert.objects.get(kind=Alert.Kind.SEARCH_FAILED)
    assert alert.key == f"search_failed:run:{failed.pk}" and alert.data["failed_engines"] == [down]
    assert down.replace("_", " ").title() in alert.body


@pytest.mark.django_db(transaction=True)
def test_a_paper_seen_by_an_earlier_run_is_not_new_even_after_leaving_the_library(
    source: Source,
) -> None:
    one = engine(source, "one", [P1])
    saved_search_save(name="Seen", query="sparse", engines=[one])
    assert run("Seen").new == 1
    Paper.objects.filter(title=P1["title"]).delete()
    again = run("Seen")
    assert again.found == 1 and again.new == 0


@pytest.mark.django_db(transaction=True)
def test_new_papers_go_into_the_project_ranked_by_its_screening_model(
    source: Source, make_paper: Callable[..., Paper], make_project: Callable[..., Project]
) -> None:
    project = make_project("Long documents")
    review = ReviewSession.objects.create(
        query="attention for long documents", domain="cs", max_results=10, project=project,
        stage=ReviewSession.Stage.SCREEN, status=ReviewSession.Status.WAITING,
    )  # fmt: skip
    decided = [
        ("Sparse attention patterns for long document transformers", "included"),
        ("Long document attention with sliding windows", "included"),
        ("Crop yields under drought in sub-Saharan Africa", "excluded"),
        ("Soil moisture and drought in farming regions", "excluded"),
    ]
    for rank, (title, status) in enumerate(decided, start=1):
        ReviewCandidate.objects.create(
            session=review, paper=make_paper(title), source="search", round=1, rank=rank,
            status=status,
        )  # fmt: skip
    drought = paper("Drought resistant crops and soil moisture in farms")
    attention = paper("Efficient attention for very long documents")
    found = engine(source, "found", [drought, attention])  # engine order: drought first
    saved_search_save(name="Ranked", query="x", engines=[found], project=project.pk)

    ranked = run("Ranked")
    assert titles(ranked) == [attention["title"], drought["title"]]
    in_project = set(
        ProjectPaper.objects.filter(project=project).values_list("paper_id", flat=True)
    )
    assert set(ranked.new_paper_ids) <= in_project


@pytest.mark.django_db(transaction=True)
def test_a_search_without_add_to_project_leaves_the_project_alone(
    source: Source, make_project: Callable[..., Project]
) -> None:
    project = make_project("Untouched")
    found = engine(source, "found", [P1])
    saved_search_save(
        name="Look only", query="x", engines=[found], project=project.pk, add_to_project=False
    )
    assert run("Look only").new == 1
    assert not ProjectPaper.objects.filter(project=project).exists()


@pytest.mark.django_db(transaction=True)
def test_an_alert_is_mailed_to_alert_email_to(source: Source, settings: Any) -> None:
    settings.ALERT_EMAIL_TO = ["researcher@example.org"]
    found = engine(source, "found", [P1, P2])
    saved_search_save(name="Mailed", query="x", engines=[found])
    run("Mailed")
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["researcher@example.org"]
    assert "2 new papers for saved search 'Mailed'" in message.subject
    assert P1["title"] in message.body
    settings.ALERT_EMAIL_TO = []
    source.answers[found] = [P3]
    run("Mailed")
    assert len(mail.outbox) == 1  # no recipients: no mail


@pytest.mark.django_db
def test_saving_validates_and_a_name_is_unique_case_insensitively(
    make_project: Callable[..., Project],
) -> None:
    from core.errors import InvalidInput, NotFound

    search, created = saved_search_save(name="Weekly LLM", query="llm", schedule="weekly")
    assert created and search.next_run_at is not None
    again, created = saved_search_save(name="weekly llm", query="large language models")
    assert not created and again.pk == search.pk and again.query == "large language models"
    SavedSearch.objects.filter(pk=search.pk).update(next_run_at=timezone.now() + timedelta(days=6))
    hourly, _ = saved_search_save(name="Weekly LLM", query="llm", schedule="hourly")
    assert hourly.next_run_at is not None
    assert hourly.next_run_at <= timezone.now() + timedelta(hours=1)  # not in six days
    manual, _ = saved_search_save(name="By hand", query="x", schedule="manual")
    assert manual.next_run_at is None
    with pytest.raises(InvalidInput, match="Unknown engine"):
        saved_search_save(name="Bad", query="x", engines=["no_such_engine"])
    with pytest.raises(InvalidInput):
        saved_search_save(name="Bad", query="x", filters={"colour": "blue"})
    with pytest.raises(InvalidInput, match="schedule"):
        saved_search_save(name="Bad", query="x", schedule="fortnightly")
    with pytest.raises(NotFound):
        saved_search_save(name="Bad", query="x", project="no-such-project")
    assert not SavedSearch.objects.filter(name="Bad").exists()


@pytest.mark.django_db(transaction=True)
def test_the_scheduler_thread_runs_a_due_search_on_the_embedded_default(
    source: Source, settings: Any
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True  # the embedded default: no broker
    settings.SAVED_SEARCH_SCHEDULER = True
    settings.SAVED_SEARCH_TICK_SECONDS = 1
    found = engine(source, "found", [P1])
    search, _ = saved_search_save(name="Hourly", query="x", engines=[found], schedule="hourly")
    started = scheduler.start_in_process()
    try:
        assert started
        assert not scheduler.start_in_process()  # once per process
        deadline = time.monotonic() + 30
        while not SavedSearchRun.objects.filter(search=search).exists():
            assert time.monotonic() < deadline, "the scheduler never ran the due search"
            time.sleep(0.2)
    finally:
        scheduler.stop_in_process()
    runs = list(SavedSearchRun.objects.filter(search=search))
    assert len(runs) == 1 and runs[0].trigger == SavedSearchRun.Trigger.SCHEDULE
    search.refresh_from_db()
    assert search.next_run_at is not None and search.next_run_at > runs[0].started_at


@pytest.mark.django_db
def test_the_scheduler_stays_off_when_switched_off_or_when_beat_schedules(settings: Any) -> None:
    settings.SAVED_SEARCH_SCHEDULER = False
    assert not scheduler.start_in_process()
    settings.SAVED_SEARCH_SCHEDULER = True
    settings.MCP_READ_ONLY = True  # a run writes
    settings.CELERY_TASK_ALWAYS_EAGER = True
    assert not scheduler.start_in_process()
    settings.MCP_READ_ONLY = False
    settings.CELERY_TASK_ALWAYS_EAGER = False  # a broker: Celery beat's job
    assert not scheduler.start_in_process()


@pytest.mark.django_db
def test_the_beat_task_sends_nothing_when_the_scheduler_is_off(settings: Any) -> None:
    search, _ = saved_search_save(name="Off", query="x", schedule="daily")
    settings.SAVED_SEARCH_SCHEDULER = False
    assert scheduler.send_due() == 0
    search.refresh_from_db()
    assert search.next_run_at is not None and scheduler.saved_searches_claim_due() == [search.pk]


@pytest.mark.django_db(transaction=True)
def test_processes_claiming_the_same_due_search_at_once_run_it_once() -> None:
    search, _ = saved_search_save(name="Contended", query="x", schedule="daily")
    claimers = 4
    barrier = threading.Barrier(claimers)
    claimed: list[list[int]] = []

    def claim() -> None:
        from django.db import connection

        try:
            barrier.wait()
            claimed.append(scheduler.saved_searches_claim_due())
        finally:
            connection.close()

    threads = [threading.Thread(target=claim) for _ in range(claimers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(pk for ids in claimed for pk in ids) == [search.pk]
    assert scheduler.saved_searches_claim_due() == []  # not due again until tomorrow


@pytest.mark.django_db(transaction=True)
def test_the_management_command_runs_one_search_or_the_due_ones(source: Source) -> None:
    from io import StringIO

    found = engine(source, "found", [P1])
    saved_search_save(name="Cmd", query="x", engines=[found], schedule="manual")
    out = StringIO()
    call_command("run_saved_searches", "--name", "cmd", stdout=out)
    assert "Cmd: ok, 1 found, 1 new" in out.getvalue()
    out = StringIO()
    call_command("run_saved_searches", "--due", stdout=out)
    assert "No saved search to run." in out.getvalue()  # manual searches are never due


@pytest.mark.django_db(transaction=True)
def test_the_atom_feed_needs_the_search_token(source: Source, client: Client) -> None:
    found = engine(source, "found", [P1, P2])
    search, _ = saved_search_save(name="Fed", query="x", engines=[found])
    run("Fed")
    url = "/feeds/saved/Fed.atom"
    assert client.get(url).status_code == 404
    assert client.get(url, {"token": "wrong"}).status_code == 404
    assert client.get("/feeds/saved/Nope.atom", {"token": search.feed_token}).status_code == 404
    answer = client.get(url, {"token": search.feed_token})
    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("application/atom+xml")
    body = answer.content.decode()
    assert "<feed" in body and "2 new papers" in body and P1["title"] in body


@pytest.mark.django_db
def test_the_home_page_inbox_lists_unread_alerts_and_marks_them_read(
    admin_user: Any,
) -> None:
    from projects.alerts import notify

    old = notify(Alert.Kind.NEW_PAPERS, "3 new papers for saved search 'A'", key="t:1")
    new = notify(Alert.Kind.SEARCH_FAILED, "Every engine failed for saved search 'B'", key="t:2")
    assert old is not None and new is not None
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    page = client.get("/").content.decode()
    inbox = page.split('id="home-alerts"')[1].split("</section>")[0]
    assert "2 unread" in inbox
    assert inbox.index("Every engine failed") < inbox.index("3 new papers")  # newest first
    assert client.post("/alerts/read", {"alert": old.pk}).status_code == 403  # no CSRF token
    token = page.split('name="csrfmiddlewaretoken" value="')[1].split('"')[0]
    answer = client.post("/alerts/read", {"alert": old.pk, "csrfmiddlewaretoken": token})
    assert answer.status_code == 302
    old.refresh_from_db()
    new.refresh_from_db()
    assert old.read_at is not None and new.read_at is None
    inbox = client.get("/").content.decode().split('id="home-alerts"')[1].split("</section>")[0]
    assert "3 new papers" not in inbox and "Every engine failed" in inbox


@pytest.mark.django_db(transaction=True)
def test_the_admin_runs_a_saved_search_now(source: Source, admin_client: Client) -> None:
    found = engine(source, "found", [P1])
    search, _ = saved_search_save(name="Admin", query="x", engines=[found])
    answer = admin_client.post(
        "/admin/projects/savedsearch/",
        {"action": "run_now", "_selected_action": [search.pk]},
        follow=True,
    )
    assert "Admin: ok, 1 found, 1 new." in answer.content.decode()
    page = admin_client.get(f"/admin/projects/savedsearch/{search.pk}/change/").content.decode()
    assert f"/feeds/saved/Admin.atom?token={search.feed_token}" in page
    alerts = admin_client.get("/admin/projects/alert/?unread=1").content.decode()
    assert "1 new paper for saved search" in alerts


@pytest.mark.django_db(transaction=True)
def test_an_open_access_search_asks_engines_open_access_for_each_new_paper(
    source: Source, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.OPEN_ACCESS_CONCURRENCY = 1
    asked: list[int] = []

    def find_and_attach(paper_id: int) -> dict[str, Any]:
        asked.append(paper_id)
        return {"paper_id": paper_id, "status": "none"}

    monkeypatch.setattr(open_access, "find_and_attach", find_and_attach)
    monkeypatch.setattr(watch_services, "OPEN_ACCESS_PER_RUN", 2)
    found = engine(source, "found", [P1, P2])
    saved_search_save(name="OA", query="x", engines=[found], open_access=True)
    first = run("OA")
    assert first.new == 2 and sorted(asked) == sorted(first.new_paper_ids)
    source.answers[found] = [P1, P2, P3]
    second = run("OA")
    assert asked[2:] == second.new_paper_ids  # only the new paper
    source.answers[found] = [P4, P5, P6, P1]  # three new: the best two are looked for
    third = run("OA")
    assert third.new == 3 and asked[3:] == third.new_paper_ids[:2]


@pytest.mark.django_db
def test_the_retraction_check_runs_on_its_own_interval_beside_the_saved_searches(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The in-process tick runs the retraction watch's scheduled check once its interval
    has passed (never at start), then not again until the next interval; beat has an
    entry for the same registered task."""
    from research_site.celery import app

    settings.RETRACTION_CHECK_EVERY_SECONDS = 3600
    monkeypatch.setattr(scheduler, "_retractions_at", float("inf"))  # as at start
    assert scheduler.tick_here() == {"saved_searches": 0, "retractions": None}
    monkeypatch.setattr(scheduler, "_retractions_at", time.monotonic() - 1)  # an hour on
    first = scheduler.tick_here()["retractions"]
    assert first is not None and first["checked"] == 0 and first["failed"] == 0
    assert scheduler.tick_here()["retractions"] is None
    assert scheduler._retractions_at > time.monotonic() + 3500
    entry = settings.CELERY_BEAT_SCHEDULE["check-retractions-due"]
    assert entry["task"] in app.tasks and entry["schedule"] == 3600.0


@pytest.mark.django_db(transaction=True)
def test_a_run_asks_the_engines_afresh_even_when_their_answer_is_cached(source: Source) -> None:
    """Engine answers are cached for a day; a saved search run must not be answered from
    that cache (it would report nothing new all day), and still leaves its answer there."""
    cached = engine(source, "cached", [P1], cache_ttl=3600)
    saved_search_save(name="Cached", query="long context", engines=[cached])
    assert titles(run("Cached")) == [P1["title"]]
    source.answers[cached] = [P2, P1]
    assert titles(run("Cached")) == [P2["title"]]
    # What others ask (search_papers: no `fresh`) is answered from the cache the run filled.
    outcome = call_engine(
        cached,
        SEARCH,
        EngineCall.search(cached, SearchRequest(query="long context", max_results=10)).arguments,
        timeout_seconds=5,
    )
    assert outcome.cached and [r["title"] for r in outcome.result] == [P2["title"], P1["title"]]


@pytest.mark.django_db
def test_a_client_scoped_to_collections_sees_only_their_searches_and_alerts() -> None:
    """A client scoped to projects (by id or name) lists, runs and deletes only the saved
    searches filing into them, saves only into them, never meets another project's names, and
    reads only their alerts (not the library-wide ones, which name other papers)."""
    mine, other = project_create(name="Mine"), project_create(name="Other")
    saved_search_save(name="Ours", query="x", project=mine.id, schedule="manual")
    saved_search_save(name="Theirs", query="x", project=other.id, schedule="manual")
    saved_search_save(name="Library", query="x", schedule="manual")
    scope = ["mine"]  # by name, case-insensitively
    visible = watch_services.saved_searches_in_scope(scope)
    assert [s["name"] for s in watch_selectors.saved_searches_list(visible)] == ["Ours"]
    assert watch_services.saved_search_get(name="ours", scope=scope).project_id == mine.id
    for hidden in ("Theirs", "Library"):
        with pytest.raises(NotFound):
            watch_services.saved_search_get(name=hidden, scope=scope)
        with pytest.raises(NotFound):
            watch_services.saved_search_delete(name=hidden, scope=scope)
    with pytest.raises(InvalidInput, match="project_id"):
        saved_search_save(name="Loose", query="x", scope=scope)
    # A name used outside the scope is free inside it: saving says nothing of the other.
    ours, created = saved_search_save(name="Theirs", query="y", project=mine.id, scope=scope)
    assert created and ours.project_id == mine.id
    theirs = SavedSearch.objects.get(name="Theirs", project=other)
    assert theirs.query == "x"
    assert watch_services.saved_search_get(name="theirs", scope=scope).pk == ours.pk
    with pytest.raises(InvalidInput, match="project/name"):
        watch_services.saved_search_get(name="Theirs")  # the whole library: two of them
    assert watch_services.saved_search_get(name=f"{other.id}/Theirs").pk == theirs.pk
    notify(Alert.Kind.NEW_PAPERS, "ours", key="k1", project=mine)
    notify(Alert.Kind.NEW_PAPERS, "theirs", key="k2", project=other)
    notify(Alert.Kind.RETRACTION, "library-wide", key="k3")
    scoped = watch_selectors.alerts_list(project_ids=project_ids_for(scope))
    assert [a.title for a in scoped] == ["ours"]
    assert len(watch_selectors.alerts_list()) == 3


# --- the failure alert in words (issue 36, item 5) -------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_failure_alert_says_what_failed_and_when_it_is_asked_again(source: Source) -> None:
    down = engine(source, "down", [P1])
    source.down.add(down)
    search, _ = saved_search_save(name="Dark", query="anything", engines=[down], schedule="daily")
    next_run = timezone.now() + timedelta(days=1)
    SavedSearch.objects.filter(pk=search.pk).update(next_run_at=next_run)
    failed = run("Dark")
    body = Alert.objects.get(kind=Alert.Kind.SEARCH_FAILED).body
    name = down.replace("_", " ").title()  # the plugin's display name
    reason = failed.engines[down]["reason"]
    if reason == "server_error":  # asked once, in-process
        assert body.startswith(f"- {name} answered with a server error: server error 503.")
    else:  # with Celery workers the run's own tries opened the engine's breaker: the alert
        # says so and still names the failure that opened it
        assert reason == "circuit_open", failed.engines[down]
        assert body.startswith(f"- {name} ") and "server error 503" in body, body
    assert f"It is asked again at the next run, {next_run:%Y-%m-%d %H:%M} UTC." in body
    assert "error (" not in body


def test_a_failure_in_words_names_the_kind_and_never_a_key(settings: Any) -> None:
    settings.SERP_API_KEY = "serp-secret-0123456789"
    words = watch_services.failure_in_words
    assert words("arXiv", {"status": "timeout", "outcome": "timeout", "reason": "read_timeout",
                           "message": "arXiv did not answer within 20 s."}) == (
        "arXiv did not answer in time: arXiv did not answer within 20 s."
    )  # fmt: skip
    limited = words("Google Scholar", {
        "status": "rate_limited", "outcome": "rate_limited", "reason": "quota",
        "message": "rejected https://serpapi.com/search?api_key=serp-secret-0123456789&q=x",
    })  # fmt: skip
    assert limited.startswith("Google Scholar refused more requests for now (rate limit): ")
    assert "serp-secret" not in limited and "[redacted]" in limited
    assert (
        words("OpenAlex", {"status": "unavailable", "outcome": "bad_key", "reason": "http_403"})
        == "OpenAlex refused the API key: HTTP 403."
    )
    assert words("arXiv", {"status": "error"}) == "arXiv failed (error)."

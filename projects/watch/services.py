"""Saving, running and deleting saved searches.

A run goes through the path `search_papers` takes (projects.intake.engines_search over
engines/services.py, the library's part by `local_search`), so every paper found is kept
in the library with the usual de-duplication. A paper is *new* to a saved search when
none of its identity keys (DOI, arXiv id, other schemes' ids, title key) was reported by
an earlier run of the same search, however the paper entered the library: found by an
engine now, imported from BibTeX last week, or in the library all along and only now
among the search's best `max_results`. A paper is reported once, even if someone deleted
it from the library meanwhile. Every key found is remembered (`SavedSearchSeen`).

The first run has reported nothing before, so it reports what the search finds now: its
starting set, in one `new_papers` alert marked `first_run` in its data. Later runs report
only what changed. A library-only search (engines ["local"]) alerts like any other.

An engine that failed or timed out is recorded as such on the run; its papers were not
seen, so they come up as new on the next run that reaches the engine. A run where some
engine failed raises a `search_failed` alert naming the failed engines (every engine
failed, or some of them: a partial run), each with what went wrong in words (timed out,
rate limited, an HTTP status, the source's message, secrets taken out) and when it is asked
again; a run with new papers a `new_papers` one
(projects/alerts.py). No network call happens inside a transaction.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from core import identity
from core.errors import InvalidInput, NotFound
from core.redaction import redact
from engines import search_strings
from engines.base import SEARCH, SearchRequest
from engines.open_access import papers_find_and_attach
from engines.registry import LOCAL_ENGINE, registry
from engines.services import engine_ids_known, engine_ids_resolve, engine_searches
from papers.models import Paper, PaperIdentifier
from papers.scoping import alerts_visible, effective_scope, project_ids_for, project_scope
from papers.search.local import local_search, search_filters_build
from papers.search.types import SearchPage
from papers.services import NON_IDENTIFYING_SCHEMES
from projects import permissions
from projects.alerts import notify
from projects.intake import engines_search
from projects.models import (
    Alert,
    Project,
    ReviewCandidate,
    SavedSearch,
    SavedSearchRun,
    SavedSearchSeen,
)
from projects.review.prioritise import DEFAULT_MODEL, Ranker
from projects.selectors import project_get
from projects.services import project_add_papers

logger = logging.getLogger(__name__)

SCHEDULE_PERIODS = {
    SavedSearch.Schedule.HOURLY: datetime.timedelta(hours=1),
    SavedSearch.Schedule.DAILY: datetime.timedelta(days=1),
    SavedSearch.Schedule.WEEKLY: datetime.timedelta(weeks=1),
}
MIN_INTERVAL_SECONDS = 60
MAX_RESULTS = 100
# What a run keeps of each engine's status: enough to say what failed and when to try again.
RUN_ENGINE_KEYS = ("status", "count", "message", "outcome", "reason", "retry_after_seconds")
# New papers of one run whose open-access PDF is looked for (the best first): the rest of a
# big run waits for find_open_access_pdf rather than hold the scheduler for hours.
OPEN_ACCESS_PER_RUN = 20


def search_period(search: SavedSearch) -> datetime.timedelta | None:
    """Time between scheduled runs; None for a manual search."""
    if search.interval_seconds:
        return datetime.timedelta(seconds=search.interval_seconds)
    return SCHEDULE_PERIODS.get(search.schedule)  # type: ignore[call-overload]


def _engines_checked(engines: Sequence[str] | None) -> list[str]:
    if not engines:
        return []
    return engine_ids_known(list(engines), operation=SEARCH)


@dataclass(frozen=True)
class SavedSearchInput:
    """A saved search's settings, checked (`saved_search_check`)."""

    name: str
    query: str
    engines: list[str]
    filters: dict[str, Any]
    project: Project | None


def saved_search_check(
    *,
    name: str,
    query: str,
    engines: Sequence[str] | None = None,
    filters: dict[str, Any] | None = None,
    project: str | None = None,
    schedule: str = SavedSearch.Schedule.DAILY,
    interval_seconds: int | None = None,
    max_results: int = 10,
    scope: Sequence[str] | None = None,
    search: SavedSearch | None = None,
) -> SavedSearchInput:
    """Check a saved search's settings as `saved_search_save` does before saving (the admin's
    form calls this, so its errors read as the tools' do). With `search` (a record being
    edited, or a new one), another search of that name in the same project is refused.

    Raises InvalidInput (empty name or query, unknown engine, bad filter or schedule, a
    name taken), NotFound (unknown project)."""
    name, query = name.strip(), query.strip()
    if not name or len(name) > 100:
        raise InvalidInput("name must be 1-100 characters.", field="name")
    if "/" in name:  # the name is a path segment of its feed's URL
        raise InvalidInput("name cannot contain '/'.", field="name")
    if not query or len(query) > settings.MAX_QUERY_CHARS:
        raise InvalidInput(f"query must be 1-{settings.MAX_QUERY_CHARS} characters.", field="query")
    if search_strings.is_search_string(query):
        search_strings.parse(query)  # a malformed one is refused now, not at every run
    if schedule not in SavedSearch.Schedule.values:
        choices = ", ".join(SavedSearch.Schedule.values)
        raise InvalidInput(f"schedule must be one of {choices}.", field="schedule")
    if interval_seconds is not None and interval_seconds < MIN_INTERVAL_SECONDS:
        raise InvalidInput(
            f"interval_seconds must be at least {MIN_INTERVAL_SECONDS}.", field="interval_seconds"
        )
    if not 1 <= max_results <= MAX_RESULTS:
        raise InvalidInput(f"max_results must be 1-{MAX_RESULTS}.", field="max_results")
    engine_list = _engines_checked(engines)
    search_filters_build(payload=filters or {}, scope=scope)  # raises InvalidInput
    target = project_get(ref=project, scope=scope) if project else None
    if scope is not None and target is None:
        raise InvalidInput(
            "This client sees only its collections: give the project_id to file into.",
            field="project_id",
        )
    if search is not None:
        others = SavedSearch.objects.filter(name__iexact=name, project=target)
        if others.exclude(pk=search.pk).exists():
            raise InvalidInput(_name_taken(name), field="name")
    return SavedSearchInput(name, query, engine_list, dict(filters or {}), target)


def _name_taken(name: str) -> str:
    return f"A saved search named {name!r} exists."


@transaction.atomic
def saved_search_save(
    *,
    name: str,
    query: str,
    engines: Sequence[str] | None = None,
    filters: dict[str, Any] | None = None,
    project: str | None = None,
    schedule: str = SavedSearch.Schedule.DAILY,
    interval_seconds: int | None = None,
    add_to_project: bool = True,
    open_access: bool = False,
    max_results: int = 10,
    enabled: bool = True,
    scope: Sequence[str] | None = None,
    search: SavedSearch | None = None,
) -> tuple[SavedSearch, bool]:
    """Create the saved search `name`, or replace its settings when one of that name
    (case-insensitively) exists; returns (search, created). With `search` (the admin's
    form: a record being edited, or a new one), that record is saved instead, renamed if
    the name changed. A scheduled search is due at once: its first run sets what later runs
    compare with. Its seen papers are kept.

    Raises InvalidInput (empty name or query, unknown engine, bad filter or schedule, a
    name taken), NotFound (unknown project): `saved_search_check`."""
    checked = saved_search_check(
        name=name, query=query, engines=engines, filters=filters, project=project,
        schedule=schedule, interval_seconds=interval_seconds, max_results=max_results,
        scope=scope, search=search,
    )  # fmt: skip
    name, target = checked.name, checked.project
    if target is not None:
        permissions.require(target, permissions.EDIT)
    given = search is not None
    if search is None:
        # Names are unique within a project: a search outside the client's collections
        # never clashes with (nor reveals itself to) a scoped client's. A search of that
        # name the client sees is replaced, the one filed into the target project first.
        same = (
            saved_searches_in_scope(scope).select_for_update(of=("self",)).filter(name__iexact=name)
        )
        search = same.filter(project=target).first() or same.first()
    created = search is None or search.pk is None
    if not created and search is not None:
        permissions.require_saved_search(search, permissions.EDIT)
    search = search or SavedSearch(name=name)
    if created and search.owner_id is None:
        user = identity.current_user()
        search.owner = user if getattr(user, "pk", None) is not None else None
    if given:  # the admin's record takes the name typed; a replaced one keeps its spelling
        search.name = name
    search.query = checked.query
    search.engines = checked.engines
    search.filters = checked.filters
    search.project = target
    search.schedule = schedule
    search.interval_seconds = interval_seconds
    search.add_to_project = add_to_project
    search.open_access = open_access
    search.max_results = max_results
    search.enabled = enabled
    period = search_period(search)
    if period is None:
        search.next_run_at = None
    else:  # a new search is due now; a changed one keeps its time unless the period ends sooner
        now = timezone.now()
        search.next_run_at = min(search.next_run_at or now, now + period)
    try:
        with transaction.atomic():
            search.save()
    except IntegrityError:
        raise InvalidInput(_name_taken(name), field="name") from None
    return search, created


def saved_searches_in_scope(scope: Sequence[str] | None = None) -> QuerySet[SavedSearch]:
    """The saved searches a client sees: all of them, or, for a client scoped to
    collections (projects, narrowed to the current client's: core.scope), those filing
    into one of them; for a principal bound by project roles, only those of its projects
    and its own unfiled ones (projects.permissions)."""
    searches = permissions.saved_searches_visible(SavedSearch.objects.select_related("project"))
    scope = effective_scope(scope)
    if scope is None:
        return searches
    return searches.filter(project_id__in=project_ids_for(scope))


def saved_search_get(*, name: str, scope: Sequence[str] | None = None) -> SavedSearch:
    """The saved search `name` (case-insensitive) among those in `scope`; NotFound
    otherwise. Names are unique within a project: `project/name` picks one when several
    projects have a search of that name (InvalidInput, listing them, if not)."""
    visible = saved_searches_in_scope(scope)
    text = name.strip()
    if "/" in text:
        project_ref, _, text = text.rpartition("/")
        visible = visible.filter(project_id__in=project_ids_for([project_ref.strip()]))
    matching = list(visible.filter(name__iexact=text.strip())[:20])
    if len(matching) > 1:
        projects = [s.project_id or "(none)" for s in matching]
        raise InvalidInput(
            f"Several saved searches are named {name!r} (projects {', '.join(projects)}): "
            "name one as project/name.",
            field="name",
        )
    search = matching[0] if matching else None
    if search is None:
        names = list(visible.values_list("name", flat=True)[:20])
        raise NotFound(f"No saved search named {name!r}.", name=name, saved_searches=names)
    return search


@transaction.atomic
def saved_search_delete(*, name: str, scope: Sequence[str] | None = None) -> None:
    """Delete the saved search `name`, its runs and what it has seen; NotFound otherwise."""
    search = saved_search_get(name=name, scope=scope)
    permissions.require_saved_search(search, permissions.EDIT)
    search.delete()


# --- running -------------------------------------------------------------------------------


def saved_search_run(
    *, search: SavedSearch, trigger: str = SavedSearchRun.Trigger.MANUAL
) -> SavedSearchRun:
    """Run `search` now: ask its engines, keep what they find in the library, work out
    which papers are new (module docstring), file those into the project when asked, rank
    them, raise the run's alerts and return the finished run. A failure of the code around
    the engines is recorded on the run (status failed, `error`) and raised again."""
    permissions.require_saved_search(search, permissions.EDIT)
    run = SavedSearchRun.objects.create(search=search, trigger=trigger)
    try:
        _run(search, run)
    except Exception as exc:
        run.status = SavedSearchRun.Status.FAILED
        run.error = f"{type(exc).__name__}: {exc}"[:2000]
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "error", "finished_at"])
        raise
    return run


def _run(search: SavedSearch, run: SavedSearchRun) -> None:
    engine_list = list(search.engines) or engine_ids_resolve(None, operation=SEARCH)
    request = SearchRequest(query=search.query, max_results=search.max_results)
    # Fresh: a cached answer (24 h) would hide what appeared since the last run. A search
    # string reaches each engine in its own dialect (engines/search_strings.py).
    searches = engine_searches(engine_ids=engine_list, request=request, fresh=True)
    local_from, local_to = searches.local_dates
    applied = search_filters_build(payload=search.filters, date_from=local_from, date_to=local_to)

    def local() -> SearchPage:
        return local_search(query=searches.local_query, filters=applied, limit=search.max_results)

    result = engines_search(
        calls=searches.calls,
        local=local if LOCAL_ENGINE in engine_list else None,
        save=True,
        refused=searches.refused,
    )
    found_ids = list(
        dict.fromkeys(entry["paper_id"] for entry in result.results if entry.get("paper_id"))
    )
    new_ids = _new_and_remember(search, run, found_ids)
    if search.project_id and new_ids:
        try:
            new_ids = _ranked(search.project_id, new_ids)
        except Exception:  # the model is a nicety: the new papers stay, in engine order
            logger.exception("Ranking saved search %s's new papers failed", search.pk)
        if search.add_to_project:
            project_add_papers(project=search.project_id, paper_ids=new_ids)
    statuses = {
        engine: {k: v for k, v in status.items() if k in RUN_ENGINE_KEYS}
        for engine, status in result.engines.items()
    }
    failed = [engine for engine, status in statuses.items() if status["status"] != "ok"]
    run.engines = statuses
    run.found = len(found_ids)
    run.new = len(new_ids)
    run.new_paper_ids = new_ids
    run.status = (
        SavedSearchRun.Status.FAILED
        if statuses and len(failed) == len(statuses)
        else SavedSearchRun.Status.PARTIAL
        if failed
        else SavedSearchRun.Status.OK
    )
    run.finished_at = timezone.now()
    run.save()
    SavedSearch.objects.filter(pk=search.pk).update(last_run_at=run.finished_at)
    _alerts(search, run, failed)  # before the slow, optional part
    if search.open_access and new_ids:
        _open_access(new_ids)


def identity_keys(paper_ids: Iterable[int]) -> dict[int, set[str]]:
    """Each paper's identity keys, by the library's rules: DOI, arXiv id, its other
    schemes' ids (not citekeys, which name but do not identify) and its title key."""
    keys: dict[int, set[str]] = {}
    rows = Paper.objects.filter(pk__in=set(paper_ids)).values("pk", "doi", "arxiv_id", "title_key")
    for row in rows:
        found = keys.setdefault(row["pk"], set())
        if row["doi"]:
            found.add(f"doi:{row['doi'].lower()}")
        if row["arxiv_id"]:
            found.add(f"arxiv:{row['arxiv_id'].lower()}")
        if row["title_key"]:
            found.add(f"title:{row['title_key']}")
    identifiers = PaperIdentifier.objects.filter(paper_id__in=keys).exclude(
        scheme__in=NON_IDENTIFYING_SCHEMES
    )
    for paper_id, scheme, value in identifiers.values_list("paper_id", "scheme", "value"):
        keys[paper_id].add(f"{scheme}:{value.lower()}")
    return {pk: {key[:255] for key in found} for pk, found in keys.items()}


def _new_and_remember(search: SavedSearch, run: SavedSearchRun, found_ids: list[int]) -> list[int]:
    """The found papers that `search` never reported (in found order), however they
    entered the library; remembers every key."""
    if not found_ids:
        return []
    keys = identity_keys(found_ids)
    all_keys = set().union(*keys.values()) if keys else set()
    seen = set(
        SavedSearchSeen.objects.filter(search=search, key__in=all_keys).values_list(
            "key", flat=True
        )
    )
    new_ids = [paper_id for paper_id in found_ids if not (keys.get(paper_id, set()) & seen)]
    SavedSearchSeen.objects.bulk_create(
        [SavedSearchSeen(search=search, key=key, first_run=run) for key in all_keys - seen],
        ignore_conflicts=True,  # a concurrent run of the same search saw it too
    )
    return new_ids


def _ranked(project_id: str, paper_ids: list[int]) -> list[int]:
    """`paper_ids` best first by the project's screening model (a classifier trained on
    the decisions of the project's reviews, projects/review/prioritise.py); as given when
    the project has no decisions to learn from (an inclusion and an exclusion)."""
    decided = list(
        ReviewCandidate.objects.filter(session__project_id=project_id)
        .exclude(status=ReviewCandidate.Status.PENDING)
        .exclude(paper_id__in=paper_ids)
        .values_list("paper_id", "status", "session__query")
    )
    if len(paper_ids) < 2 or len({status for _, status, _ in decided}) < 2:
        return paper_ids
    labelled = {
        paper_id: status == ReviewCandidate.Status.INCLUDED for paper_id, status, _ in decided
    }
    order = [*labelled, *paper_ids]
    texts_by_id = {
        row["pk"]: f"{row['title']}. {row['abstract'] or row['snippet'] or ''}"
        for row in Paper.objects.filter(pk__in=order).values("pk", "title", "abstract", "snippet")
    }
    ranker = Ranker([texts_by_id.get(pk, "") for pk in order], model=DEFAULT_MODEL)
    labels = {index: labelled[pk] for index, pk in enumerate(order[: len(labelled)])}
    pending = list(range(len(labelled), len(order)))
    return [order[item.index] for item in ranker.order(labels, pending, question=decided[0][2])]


def _open_access(paper_ids: list[int]) -> None:
    """Look for open-access PDFs of the run's best OPEN_ACCESS_PER_RUN new papers
    (engines/open_access.py, OPEN_ACCESS_CONCURRENCY at once); what fails is counted
    there and never stops the run. The rest can be fetched with find_open_access_pdf."""
    report = papers_find_and_attach(paper_ids[:OPEN_ACCESS_PER_RUN])
    for paper_id, reason in report.errors:
        logger.warning("Open-access lookup failed for paper %s: %s", paper_id, reason)


def _alerts(search: SavedSearch, run: SavedSearchRun, failed: list[str]) -> None:
    project: Project | None = search.project
    link = f"/admin/projects/savedsearchrun/{run.pk}/change/"
    if run.new:
        titles = list(
            Paper.objects.filter(pk__in=run.new_paper_ids[:5]).values_list("title", flat=True)
        )
        data: dict[str, Any] = {
            "saved_search": search.name, "run_id": run.pk, "paper_ids": run.new_paper_ids
        }  # fmt: skip
        if not SavedSearchRun.objects.filter(search=search, started_at__lt=run.started_at).exists():
            data["first_run"] = True  # the search's starting set, not a change
        notify(
            Alert.Kind.NEW_PAPERS,
            f"{run.new} new paper{'s' if run.new != 1 else ''} for saved search {search.name!r}",
            key=f"new_papers:run:{run.pk}",
            body="\n".join(f"- {title}" for title in titles)
            + ("\n- ..." if run.new > len(titles) else ""),
            project=project,
            link=link,
            data=data,
        )
    if failed:
        # A partial run is worth an alert too: its failed engines' papers are missing
        # until a run reaches them, and nobody would know otherwise.
        names = engine_names(failed)
        retry = _retry_text(search)
        reasons = "\n".join(
            f"- {failure_in_words(names[engine], run.engines.get(engine, {}))} {retry}"
            for engine in failed
        )
        everything = run.status == SavedSearchRun.Status.FAILED
        what = "Every engine" if everything else f"{len(failed)} of {len(run.engines)} engines"
        notify(
            Alert.Kind.SEARCH_FAILED,
            f"{what} failed for saved search {search.name!r}: "
            + ", ".join(names[engine] for engine in failed),
            key=f"search_failed:run:{run.pk}",
            body=reasons,
            project=project,
            link=link,
            data={
                "saved_search": search.name, "run_id": run.pk, "failed_engines": failed,
                "partial": not everything,
            },
        )  # fmt: skip


# What went wrong, by the engine's outcome and reason (engines/base.py), in a researcher's words.
_FAILURE_WORDS = {
    "circuit_open": "was not asked: it had failed repeatedly just before",
    "server_error": "answered with a server error",
    "quota_exhausted": "has used up its quota",
    "not_configured": "is not configured",
    "engine_bug": "failed with an internal error",
    "query_untranslatable": "cannot express this query",
    "timeout": "did not answer in time",
    "unreachable": "could not be reached",
    "unavailable": "could not be used",
    "rate_limited": "refused more requests for now (rate limit)",
    "bad_key": "refused the API key",
    "cancelled": "was cancelled",
    "unsupported": "cannot run this search",
}


def failure_in_words(name: str, status: dict[str, Any]) -> str:
    """One engine's failure on a run, as a researcher reads it: the engine's name, what
    happened (timed out, rate limited, could not be reached, an HTTP status...) and the
    source's own message, with any secret it might hold taken out (core/redaction.py)."""
    reason, outcome = str(status.get("reason") or ""), str(status.get("outcome") or "")
    state = str(status.get("status") or "error")
    words = _FAILURE_WORDS.get(reason) or _FAILURE_WORDS.get(outcome or state) or "failed"
    message = redact(" ".join(str(status.get("message") or "").split()))[:300].rstrip(".")
    if not message and reason.startswith("http_"):
        message = f"HTTP {reason[5:]}"
    if message:
        return f"{name} {words}: {message}."
    return f"{name} {words} ({(reason or state).replace('_', ' ')})."


def engine_names(engine_ids: Iterable[str]) -> dict[str, str]:
    """Each engine's display name ("arXiv"), its id for one no longer loaded."""
    loaded = registry.engines()
    return {
        engine_id: loaded[engine_id].name if engine_id in loaded else engine_id
        for engine_id in engine_ids
    }


def _retry_text(search: SavedSearch) -> str:
    """When the failed engines are asked again: at the search's next run."""
    search.refresh_from_db(fields=["next_run_at", "enabled"])
    if search.next_run_at and search.enabled:
        return f"It is asked again at the next run, {search.next_run_at:%Y-%m-%d %H:%M} UTC."
    return "It is asked again when the search is next run (it has no schedule running)."


# --- alerts --------------------------------------------------------------------------------


def alerts_mark_read(*, alert_ids: Sequence[int] | None = None, everything: bool = False) -> int:
    """Mark alerts read (these ids, or every unread one); returns how many changed."""
    unread = Alert.objects.filter(read_at__isnull=True)
    allowed = project_scope(None)  # a scoped client (or a member) marks only those it sees
    if allowed is not None:
        unread = unread.filter(alerts_visible(allowed))
    if not everything:
        unread = unread.filter(Q(pk__in=list(alert_ids or [])))
    return unread.update(read_at=timezone.now())

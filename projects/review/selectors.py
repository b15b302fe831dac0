"""Reads of the review workflow: a session (within the client's collections), its
candidates page by page, decisions, PRISMA counts, the search log and the exports of a
finished review. What get_session shows of them is composed in state.py.

One module because every read here is of one session's state, and the exports render the
same counts and decisions the state shows.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterable
from typing import Any

from django.db.models import Count

from core.errors import InvalidInput, NotFound
from papers.exports import render_export
from papers.models import Paper
from papers.scoping import client_project_ids, permitted_project_ids
from papers.selectors import paper_brief, paper_record, with_relations
from projects.models import ReviewCandidate, ReviewCheckpoint, ReviewSession
from projects.review.agreement import (
    MAYBE,
    RESOLUTION,
    agreement_summary,
    maybes,
    screener_votes,
)
from projects.review.dedup import duplicates_of
from projects.review.prisma import grouped_tally, prisma_counts
from projects.review.workflow import SessionNotComplete, WorkflowFailed

EXPORT_FORMATS = ("json", "bibtex", "markdown", "csv", "ris")
# Abstracts of a page of candidates (get_session's page is shorter: state.py).
ABSTRACT_MAX_CHARS = 2000
TRUNCATED = " […]"


def review_session_id(session_id: Any) -> uuid.UUID:
    """The session's UUID; NotFound for anything that cannot be one (no session has it),
    and, for a client scoped to collections, for a session it may not see (started
    outside its collections and not filed into them): every service that takes a
    session id resolves it here, so none reads or changes another project's review."""
    try:
        pk = uuid.UUID(str(session_id).strip())
    except ValueError:
        raise NotFound(f"No review session {session_id!r}.", session_id=str(session_id)) from None
    allowed = client_project_ids()
    permitted = permitted_project_ids()  # a principal bound by project roles: its projects
    if allowed is not None or permitted is not None:
        row = ReviewSession.objects.filter(pk=pk).values_list("project_id", "collections").first()
        open_review = row is not None and not row[0] and not row[1]  # in no project
        if row is None or any(
            not review_visible(ids, project_id=row[0], collections=row[1])
            for ids in (allowed, None if open_review else permitted)
            if ids is not None
        ):
            raise NotFound(f"No review session {session_id!r}.", session_id=str(session_id))
    return pk


def review_visible(allowed: Iterable[str], *, project_id: str | None, collections: Any) -> bool:
    """Whether a client seeing the projects `allowed` may see a review filed into
    `project_id` and started within `collections`."""
    mine = set(allowed)
    started_in = collections if isinstance(collections, list) else []
    return project_id in mine or any(ref in mine for ref in started_in)


def review_get(*, session_id: str) -> ReviewSession:
    """The review session; NotFound if unknown (or removed)."""
    session = (
        ReviewSession.objects.select_related("project")
        .filter(pk=review_session_id(session_id))
        .first()
    )
    if session is None:
        raise NotFound(f"No review session {session_id!r}.", session_id=str(session_id))
    return session


def review_pending_checkpoint(session: ReviewSession) -> ReviewCheckpoint | None:
    return session.checkpoints.filter(resolved_at__isnull=True).first()


def review_search_log(*, session: ReviewSession) -> dict[str, Any]:
    """The review's search log (PRISMA-S): every search it ran, per query and source, with
    the query as written and as sent, the time, the records returned and the source's
    total, in the order they ran (rounds a rejection discarded included, by `round`)."""
    return {
        "session_id": str(session.pk),
        "round": session.round,
        "searches": list(session.search_log or []),
    }


def review_decisions(*, session: ReviewSession) -> list[dict[str, Any]]:
    checkpoints = session.checkpoints.select_related("decision").order_by("sequence")
    history = []
    for checkpoint in checkpoints:
        decision = getattr(checkpoint, "decision", None)
        if decision is None:
            continue
        history.append(
            {
                "checkpoint": checkpoint.sequence,
                "kind": checkpoint.kind,
                "round": checkpoint.round,
                "action": decision.action,
                "note": decision.note or None,
                "decided_by": decision.decided_by,
                "iteration": decision.iteration,
                "at": decision.created_at.isoformat(timespec="seconds"),
            }
        )
    return history


def screeners(session: ReviewSession) -> dict[str, Any]:
    """Who screened a review (issue 39 item 4): each screener label with the person and
    clients behind it (ReviewCandidate.voters; none for votes recorded before), its
    include / exclude / maybe counts and resolutions; the agreement of the two busiest
    (agreement.agreement_summary)."""
    rows: dict[str, dict[str, Any]] = {}

    def row(label: str) -> dict[str, Any]:
        return rows.setdefault(
            label,
            {"screener": label, "user": "", "clients": [], "include": 0, "exclude": 0,
             "maybe": 0, "resolved": 0},
        )  # fmt: skip

    def who(entry: dict[str, Any], voter: dict[str, Any] | None) -> None:
        if voter:
            entry["user"] = entry["user"] or voter.get("user", "")
            client = voter.get("client", "")
            if client and client not in entry["clients"]:
                entry["clients"].append(client)

    candidates = session.candidates.exclude(votes={}).values_list("paper_id", "votes", "voters")
    votes: dict[int, Any] = {}
    for paper_id, record, voters in candidates:
        votes[paper_id] = record
        for label, vote in screener_votes(record).items():
            entry = row(label)
            entry[vote] = entry.get(vote, 0) + 1
            who(entry, (voters or {}).get(label))
        for label in maybes(record):
            entry = row(label)
            entry[MAYBE] += 1
            who(entry, (voters or {}).get(label))
        if RESOLUTION in record:
            entry = row(str(record[RESOLUTION].get("by", "")))
            entry["resolved"] += 1
            who(entry, (voters or {}).get(RESOLUTION))
    return {
        "screeners": sorted(rows.values(), key=lambda r: r["screener"]),
        "agreement": agreement_summary(votes, {}, shown=0),
    }


def review_counts(*, session: ReviewSession) -> dict[str, Any]:
    """PRISMA-style counts: records identified per engine, duplicates removed, removed for
    the date range or the max_results limit, screened, excluded (with reasons), included;
    the citation search's under `citation_search`; `included_total` of both."""
    rows = session.candidates.values("source", "status").annotate(n=Count("pk")).order_by("source")
    tally: Counter[tuple[str, str]] = Counter({(r["source"], r["status"]): r["n"] for r in rows})
    reasons: dict[str, Counter[str]] = {"search": Counter(), "citation": Counter()}
    excluded = session.candidates.filter(status=ReviewCandidate.Status.EXCLUDED)
    for source, reason in excluded.values_list("source", "reason"):
        reasons[source][reason or "no reason given"] += 1
    # A grouped version split back out (dedup.duplicate_split) is no longer a duplicate
    # removed but a record screened.
    _, split = grouped_tally(session)

    def block(source: str, identification: dict[str, Any]) -> dict[str, Any]:
        values = {
            "identified": identification.get("identified", {}),
            # Sources never reached: their outcome, never a count of 0, which would read as
            # "searched, nothing found".
            "not_reached": identification.get("not_reached", {}),
            "sources": identification.get("sources", {}),
            "identified_total": identification.get("identified_total", 0),
            "duplicates_removed": identification.get("duplicates_removed", 0) - split[source],
            "outside_date_range": identification.get("outside_date_range", 0),
            "over_limit": identification.get("over_limit", 0),
            "screened": sum(n for (s, _), n in tally.items() if s == source),
            "pending": tally[(source, "pending")],
            "excluded": tally[(source, "excluded")],
            "excluded_reasons": dict(reasons[source].most_common()),
            "included": tally[(source, "included")],
        }
        return values

    identification = session.identification or {}
    counts = block("search", identification.get("search", {}))
    if "citations" in identification:
        counts["citation_search"] = block("citation", identification["citations"])
    counts["included_total"] = tally[("search", "included")] + tally[("citation", "included")]
    return counts


def review_candidates(
    *,
    session: ReviewSession,
    source: str,
    offset: int,
    limit: int,
    pending_only: bool,
    abstract_chars: int = ABSTRACT_MAX_CHARS,
) -> tuple[list[dict[str, Any]], int]:
    """A page of a review's candidates from one source, best first, with abstracts (cut
    at `abstract_chars`, marked with TRUNCATED)."""
    queryset = session.candidates.filter(source=source)
    if pending_only:
        queryset = queryset.filter(status=ReviewCandidate.Status.PENDING)
    total = queryset.count()
    page = list(queryset.order_by("rank")[offset : offset + limit])
    versions = duplicates_of(page)
    papers = {
        paper.pk: paper
        for paper in with_relations(Paper.objects.filter(pk__in=[c.paper_id for c in page]))
    }
    items = []
    for candidate in page:
        paper = papers.get(candidate.paper_id)
        if paper is None:
            continue
        abstract = paper.abstract or paper.snippet
        if len(abstract) > abstract_chars:
            abstract = abstract[:abstract_chars].rstrip() + TRUNCATED
        items.append(
            {
                **paper_brief(paper),
                "abstract": abstract or None,
                "arxiv_id": paper.arxiv_id,
                "url": paper.source_url or None,
                "rank": candidate.rank,
                "score": candidate.score,
                "engines": candidate.engines,
                "queries": candidate.queries,
                "cites": candidate.cites,
                "status": candidate.status,
                "reason": candidate.reason or None,
            }
        )
        if left_open := maybes(candidate.votes):
            items[-1]["maybe"] = left_open  # {screener: reason}: undecided by them
        if candidate.pk in versions:
            # Other versions of this work (a preprint, the same paper from another
            # source), screened through this one; split_duplicate undoes a wrong grouping.
            items[-1]["versions"] = versions[candidate.pk]
    return items, total


def review_prisma(*, session: ReviewSession) -> dict[str, Any]:
    """The review's PRISMA 2020 flow numbers (projects/review/prisma.py)."""
    return prisma_counts(session=session, counts=review_counts(session=session))


def review_maybes(*, session: ReviewSession) -> list[dict[str, Any]]:
    """The search records some screener left "maybe" and never decided, by rank: paper_id,
    title, status (another screener's decision, or pending), {screener: reason}."""
    rows = (
        session.candidates.filter(source="search")
        .exclude(votes={})
        .order_by("rank")
        .values_list("paper_id", "paper__title", "status", "votes")
    )
    return [
        {"paper_id": pk, "title": title, "status": status, "screeners": left_open}
        for pk, title, status, votes in rows
        if (left_open := maybes(votes))
    ]


def review_included_papers(*, session: ReviewSession) -> list[Paper]:
    """The included papers: search results by rank, then citation-search results."""
    included = session.candidates.filter(status=ReviewCandidate.Status.INCLUDED)
    order = [
        pk
        for source in ("search", "citation")
        for pk in included.filter(source=source).order_by("rank").values_list("paper_id", flat=True)
    ]
    papers = {paper.pk: paper for paper in with_relations(Paper.objects.filter(pk__in=order))}
    return [papers[pk] for pk in order if pk in papers]


def review_export(*, session: ReviewSession, fmt: str) -> dict[str, Any]:
    """A finished review's included papers as json, bibtex, markdown, csv or ris; json and
    markdown also carry the question, the plan, the decisions and the PRISMA counts.

    Raises SessionNotComplete / WorkflowFailed before completion, InvalidInput for an
    unknown format."""
    name = (fmt or "").strip().lower()
    if name not in EXPORT_FORMATS:
        raise InvalidInput(
            f"Unknown format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}.", field="format"
        )
    if session.status == ReviewSession.Status.FAILED:
        raise WorkflowFailed(
            f"Review {session.pk} failed: {session.error}",
            session_id=str(session.pk),
            error=session.error,
        )
    if session.status != ReviewSession.Status.COMPLETE:
        raise SessionNotComplete(
            f"Review {session.pk} is not complete (it is {session.status} at {session.stage}); "
            "export_results works once it is.",
            session_id=str(session.pk),
            state=session.status,
        )
    papers = review_included_papers(session=session)
    if name == "json":
        content = json.dumps(
            {"review": _summary(session), "papers": [paper_record(p) for p in papers]},
            ensure_ascii=False,
            indent=2,
        )
    elif name == "markdown":
        content = _markdown(session, papers)
    else:
        content = render_export(papers, name) if papers else ""
    return {"session_id": str(session.pk), "format": name, "count": len(papers), "content": content}


# --- pieces ---------------------------------------------------------------------------------


def _summary(session: ReviewSession) -> dict[str, Any]:
    return {
        "session_id": str(session.pk),
        "query": session.query,
        "domain": session.domain,
        "plan": session.plan,
        "counts": review_counts(session=session),
        "decisions": review_decisions(session=session),
        "maybe": review_maybes(session=session),
        "search_log": list(session.search_log or []),
        "project_id": session.project_id,
        "completed_at": session.completed_at.isoformat() if session.completed_at else None,
    }


def _markdown(session: ReviewSession, papers: list[Paper]) -> str:
    counts = review_counts(session=session)
    plan = session.plan or {}
    lines = [f"# Literature review: {session.query}", ""]
    lines.append(f"Domain: {session.domain} · project: `{session.project_id}`")
    lines += ["", "## Plan", ""]
    lines += [f"- Query: `{query}`" for query in plan.get("queries", [])]
    lines.append(f"- Engines: {', '.join(plan.get('engines', []))}")
    dates = f"{plan.get('date_from') or 'any'} to {plan.get('date_to') or 'now'}"
    lines.append(f"- Dates: {dates}")
    lines += [f"- Criterion: {criterion}" for criterion in plan.get("criteria", [])]
    lines += ["", "## PRISMA counts", "", "| stage | records |", "|---|---|"]
    lines += _count_rows(counts, "")
    if "citation_search" in counts:
        lines += _count_rows(counts["citation_search"], "citation search: ")
    lines.append(f"| included in total | {counts['included_total']} |")
    lines += _search_log_lines(session.search_log or [])
    if left_open := review_maybes(session=session):
        lines += ["", "## Left maybe by a screener", ""]
        lines += [
            f"- {item['title']} ({item['status']}): "
            + "; ".join(f"{who}: {why or 'no reason'}" for who, why in item["screeners"].items())
            for item in left_open
        ]
    lines += ["", f"## Included papers ({len(papers)})", ""]
    if papers:
        rendered = render_export(papers, "markdown")
        lines.append(rendered.split("\n", 2)[2] if rendered.startswith("# ") else rendered)
    else:
        lines.append("No papers were included.")
    return "\n".join(lines).rstrip() + "\n"


def _search_log_lines(log: list[dict[str, Any]]) -> list[str]:
    """The search log as a table: what each source was sent, when, and what it gave."""
    if not log:
        return []
    lines = [
        "",
        "## Search log",
        "",
        "| round | source | query as written | query sent | searched (UTC) | records | "
        "source total | status |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for entry in log:
        status = entry.get("status", "")
        if status != "ok" and entry.get("message"):
            status = f"{status}: {entry['message']}"
        cells = [
            entry.get("round", ""),
            entry.get("source", ""),
            f"`{entry.get('query', '')}`",
            f"`{entry['query_sent']}`" if entry.get("query_sent") else "not sent",
            entry.get("searched_at") or "",
            entry.get("count", 0),
            entry["total"] if entry.get("total") is not None else "not reported",
            status,
        ]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    notes = [f"{entry.get('source')}: {note}" for entry in log for note in entry.get("notes", [])]
    if notes:
        lines += ["", "Translation notes:", ""]
        lines += [f"- {note}" for note in dict.fromkeys(notes)]
    return lines


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _count_rows(counts: dict[str, Any], prefix: str) -> list[str]:
    rows = [
        f"| {prefix}identified via {_cell(engine)} | {n} |"
        for engine, n in counts["identified"].items()
    ]
    rows += [
        f"| {prefix}not reached: {_cell(engine)} | {_cell(outcome.replace('_', ' '))} |"
        for engine, outcome in counts.get("not_reached", {}).items()
    ]
    rows += [
        f"| {prefix}duplicates removed | {counts['duplicates_removed']} |",
        f"| {prefix}outside the date range | {counts['outside_date_range']} |",
        f"| {prefix}over max_results | {counts['over_limit']} |",
        f"| {prefix}screened | {counts['screened']} |",
        f"| {prefix}excluded | {counts['excluded']} |",
    ]
    rows += [
        f"| {prefix}excluded: {_cell(reason)} | {n} |"
        for reason, n in counts["excluded_reasons"].items()
    ]
    rows.append(f"| {prefix}included | {counts['included']} |")
    return rows

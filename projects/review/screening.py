"""Screening record by record at a review's `screen` checkpoint (docs/SCREENING.md).

While a review waits at `screen`, its candidates can be decided one record or a batch at a
time instead of all at once: `screening_next` gives the pending records most likely to be
included first (projects/review/prioritise.py, retrained on every call) with the stopping
rule's verdict (projects/review/stopping.py); `screening_decide` records decisions, in
order, with who made them. The checkpoint stays pending: only `decide` closes it.
After record-by-record decisions, `decide approve` keeps them and excludes the records
never screened as NOT_SCREENED (the screener stopped, ideally when the rule said it was
safe); `edit` still applies to the pending records only.

With two screeners, a record they disagree on is disputed until a third decision
(`screening_decide(..., resolve=True)`: a person in the admin or an agent) resolves it,
with who and why (projects/review/agreement.py); while any is unresolved, neither
`approve` nor `edit` closes the screen checkpoint (`screening_unresolved_check`).

A screener may also answer "maybe" (undecided, come back later): kept among the record's
votes (`votes[screener] = "maybe"`, its reason under MAYBE_REASONS) until that screener
decides, it sets no status, so it is not a label for the model, not a decision for the
stopping rule and not a PRISMA count; the record comes back to that screener after every
undecided one. `approve` is refused while a record is only "maybe" (screening_on_approve):
it was seen and left open, so excluding it as not screened would misreport it.

This module reads the session through the models, not projects/review/selectors.py, which
imports `screening_status` from here for get_session.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from core.attribution import USER_PREFIX, Attribution, actor_label, attribution
from core.errors import InvalidInput, NotFound
from papers.models import Paper
from projects import permissions
from projects.models import ReviewCandidate, ReviewCheckpoint, ReviewSession
from projects.review import stopping
from projects.review.agreement import (
    MAYBE,
    MAYBE_REASONS,
    RESERVED_PREFIX,
    RESOLUTION,
    agreement_summary,
    is_disputed,
    is_unresolved,
)
from projects.review.prioritise import DEFAULT_MODEL, Ranked, Ranker
from projects.review.workflow import (
    MAX_REASON,
    NO_REASON,
    InvalidDecision,
    NoPendingCheckpoint,
    SessionComplete,
    WorkflowFailed,
)

NOT_SCREENED = "not screened (screening stopped)"
ABSTRACT_MAX_CHARS = 1000
TRUNCATED = " […]"
DECISIONS = ("include", "exclude")
CHOICES = (*DECISIONS, MAYBE)  # what a screener may answer; resolve takes DECISIONS only
MAYBE_AGAIN = "you marked it maybe: back after the undecided records"
MAX_SCREENER = 150
SECOND_OPINION = "screened by another screener (decision hidden): your independent opinion"
Status = ReviewCandidate.Status
SEARCH = ReviewCandidate.Source.SEARCH


@dataclass
class _Screening:
    """The search candidates of a review at `screen`, and the ranker over their texts."""

    session: ReviewSession
    checkpoint: ReviewCheckpoint
    candidates: list[ReviewCandidate]  # by search rank

    @functools.cached_property
    def ranker(self) -> Ranker:
        # Built on first use: the TF-IDF fit is most of a ranking's cost, and the tallies
        # and stopping report (screen_decide's answer, get_session) need only the decisions.
        texts = [f"{c.paper.title}. {c.paper.abstract or c.paper.snippet}" for c in self.candidates]
        return Ranker(texts, model=DEFAULT_MODEL)

    def labels(self) -> dict[int, bool]:
        return {
            index: candidate.status == Status.INCLUDED
            for index, candidate in enumerate(self.candidates)
            if candidate.status != Status.PENDING
        }

    def labels_in_order(self) -> list[bool]:
        decided = [c for c in self.candidates if c.screened_order is not None]
        decided.sort(key=lambda c: c.screened_order or 0)
        return [c.status == Status.INCLUDED for c in decided]

    def ranked(self) -> list[Ranked]:
        pending = [i for i, c in enumerate(self.candidates) if c.status == Status.PENDING]
        return self.ranker.order(self.labels(), pending, question=self.session.query)

    def report(self, *, target_recall: float, confidence: float) -> stopping.StoppingReport:
        return stopping.stopping_assess(
            self.labels_in_order(),
            len(self.candidates),
            target_recall=target_recall,
            confidence=confidence,
        )


def _at_screen(session: ReviewSession) -> ReviewCheckpoint:
    if session.status == ReviewSession.Status.COMPLETE:
        raise SessionComplete(
            f"Review {session.pk} is complete; export_results gives its papers.",
            session_id=str(session.pk),
        )
    if session.status == ReviewSession.Status.FAILED:
        raise WorkflowFailed(
            f"Review {session.pk} failed: {session.error}",
            session_id=str(session.pk),
            error=session.error,
        )
    checkpoint = session.checkpoints.filter(resolved_at__isnull=True).first()
    if (
        session.status != ReviewSession.Status.WAITING
        or checkpoint is None
        or (checkpoint.kind != ReviewCheckpoint.Kind.SCREEN)
    ):
        where = checkpoint.kind if checkpoint else session.status
        raise NoPendingCheckpoint(
            f"Review {session.pk} is not waiting at its screen checkpoint (it is at {where}); "
            "screening record by record works there.",
            session_id=str(session.pk),
        )
    return checkpoint


def _load(session: ReviewSession) -> _Screening:
    checkpoint = _at_screen(session)
    candidates = list(
        session.candidates.filter(source=SEARCH).order_by("rank").select_related("paper")
    )
    return _Screening(session, checkpoint, candidates)


def _checked_target(target_recall: float, confidence: float) -> None:
    if not 0.5 <= target_recall < 1 or not 0.5 <= confidence < 1:
        raise InvalidInput("target_recall and confidence must be 0.5-0.99.", field="target_recall")


def screening_next(
    *,
    session: ReviewSession,
    limit: int = 10,
    target_recall: float = stopping.TARGET_RECALL,
    confidence: float = stopping.CONFIDENCE,
    screener: str | None = None,
) -> dict[str, Any]:
    """The next `limit` pending records of a review at `screen`, most likely inclusions
    first, each with why it ranks there; the tallies and the stopping report. For a
    `screener`, first the records other screeners decided and this one has not, in the
    order they were decided and without their decisions (a second, independent opinion).

    Raises NoPendingCheckpoint (not at screen), SessionComplete, WorkflowFailed,
    InvalidInput (limit, target_recall or confidence out of range)."""
    if not 1 <= limit <= settings.MAX_PAGE_SIZE:
        raise InvalidInput(f"limit must be 1-{settings.MAX_PAGE_SIZE}.", field="limit")
    _checked_target(target_recall, confidence)
    who = attribution()
    if screener or who.named:
        screener = actor_label(screener, who)  # the label screening_decide records
    screening = _load(session)
    ranked = screening.ranked()
    report = screening.report(target_recall=target_recall, confidence=confidence)
    shown = ranked
    # "maybe"s come back last: this screener's own, or (no screener) anyone's.
    later = {
        index
        for index, c in enumerate(screening.candidates)
        if (c.votes.get(screener) == MAYBE if screener else MAYBE in c.votes.values())
        and RESOLUTION not in c.votes
    }
    if screener:
        others = sorted(
            (
                (c.screened_order or 0, index)
                for index, c in enumerate(screening.candidates)
                if c.status != Status.PENDING and screener not in c.votes
            ),
        )
        shown = [Ranked(index, None, SECOND_OPINION) for _, index in others] + ranked
    if later:
        first = [item for item in shown if item.index not in later]
        again = [Ranked(i.index, i.score, MAYBE_AGAIN) for i in ranked if i.index in later]
        decided = sorted(later - {i.index for i in again}, key=_order_of(screening))
        shown = first + again + [Ranked(index, None, MAYBE_AGAIN) for index in decided]
    records = []
    for item in shown[:limit]:
        paper: Paper = screening.candidates[item.index].paper
        abstract = paper.abstract or paper.snippet or ""
        if len(abstract) > ABSTRACT_MAX_CHARS:
            abstract = abstract[:ABSTRACT_MAX_CHARS] + TRUNCATED
        records.append(
            {
                "paper_id": paper.pk,
                "title": paper.title,
                "year": paper.year,
                "abstract": abstract or None,
                "score": None if item.score is None else round(item.score, 4),
                "rank_reason": item.reason,
            }
        )
    return {
        "session_id": str(session.pk),
        "checkpoint": screening.checkpoint.sequence,
        "records": records,
        **_tallies(screening.candidates),
        "stopping": report.as_dict(),
        "next": _hint(screening, report, len(ranked)),
    }


def _order_of(screening: _Screening) -> Any:
    return lambda index: screening.candidates[index].screened_order or 0


@dataclass(frozen=True)
class ScreeningDecision:
    """One screener's decision on one record: the paper (paper_id, human id or citekey),
    include or exclude (or, with `maybe`, neither yet), and why (kept for an exclusion or
    a maybe; required to resolve a disagreement). The reason is checked and its
    whitespace collapsed when made.

    Raises InvalidInput for a reason over MAX_REASON characters or holding NUL."""

    paper: int | str
    include: bool
    reason: str = ""
    maybe: bool = False

    def __post_init__(self) -> None:
        reason = " ".join(self.reason.split())
        if len(reason) > MAX_REASON or "\x00" in reason:
            raise InvalidInput(
                f"The reason for {self.paper!r} must be text of at most {MAX_REASON} characters.",
                field="decisions",
            )
        object.__setattr__(self, "reason", reason)

    @property
    def decision(self) -> str:
        return MAYBE if self.maybe else DECISIONS[0 if self.include else 1]


def screening_decisions_parse(entries: object) -> list[ScreeningDecision]:
    """A list of decisions, each a `ScreeningDecision` (kept as it is) or its untyped form
    `{"paper", "decision", "reason"}` (JSON, the admin's form). Raises InvalidInput for
    anything but 1-MAX_PAGE_SIZE entries of either kind (a paper given as paper_id or
    text), or a reason `ScreeningDecision` refuses."""
    if not isinstance(entries, list | tuple) or not 1 <= len(entries) <= settings.MAX_PAGE_SIZE:
        raise InvalidInput(
            f"decisions must list 1-{settings.MAX_PAGE_SIZE} decisions.", field="decisions"
        )
    parsed = []
    for entry in entries:
        if isinstance(entry, ScreeningDecision):
            parsed.append(entry)
            continue
        if (
            not isinstance(entry, Mapping)
            or entry.get("decision") not in CHOICES
            or not isinstance(entry.get("paper"), int | str)
        ):
            raise InvalidInput(
                'Each decision is {"paper": ..., "decision": "include" | "exclude" | "maybe"}.',
                field="decisions",
            )
        include = entry["decision"] == DECISIONS[0]
        reason = str(entry.get("reason") or "")
        maybe = entry["decision"] == MAYBE
        parsed.append(
            ScreeningDecision(paper=entry["paper"], include=include, reason=reason, maybe=maybe)
        )
    return parsed


def _screener_name(decided_by: str, who: Attribution | None = None) -> str:
    screener = " ".join(str(decided_by).split())
    if who is not None and not who.named and screener.startswith(USER_PREFIX):
        raise InvalidInput(
            f"screener cannot start with {USER_PREFIX!r}: the server names people signed in "
            "with their own token so (docs/AUTH.md).",
            field="screener",
        )
    if not 1 <= len(screener) <= MAX_SCREENER or not screener.isprintable():
        raise InvalidInput(f"screener must be 1-{MAX_SCREENER} characters.", field="screener")
    if screener.startswith(RESERVED_PREFIX):
        raise InvalidInput(
            f"screener cannot start with {RESERVED_PREFIX!r} (reserved).", field="screener"
        )
    return screener


@transaction.atomic
def screening_decide(
    *,
    session_id: uuid.UUID,
    decisions: Sequence[ScreeningDecision | Mapping[str, Any]],
    decided_by: str = "agent",
    resolve: bool = False,
) -> dict[str, Any]:
    """Record `decided_by`'s include/exclude decisions on records of a review at
    `screen`, in the order given, all or none: every decision is checked before any is
    saved. On a pending record the decision sets its status; on one another screener
    decided, it is a second opinion, kept for the agreement. A "maybe" is kept for this
    screener only (with its reason) and sets nothing; the screener's later include or
    exclude replaces it.

    With `resolve`, each decision settles a disagreement instead: the record must be
    disputed (its screeners voted differently) and not yet resolved, and the reason (why)
    is required; the decision becomes the record's status and is kept with who made it
    and why, beside the votes (not counted in kappa).

    `decisions`: as `screening_decisions_parse` takes them, checked once before any
    candidate is read.
    Raises InvalidInput for a malformed list (or a resolution without a reason),
    InvalidDecision naming the papers that are unknown, not pending, listed twice, not
    disputed or already resolved; NoPendingCheckpoint, SessionComplete, WorkflowFailed,
    NotFound."""
    permissions.require_review(session_id, permissions.EDIT if resolve else permissions.SCREEN)
    session = ReviewSession.objects.select_for_update().filter(pk=session_id).first()
    if session is None:
        raise NotFound(f"No review session {session_id!r}.", session_id=str(session_id))
    _at_screen(session)
    who = attribution()
    screener = _screener_name(actor_label(decided_by, who), who)
    typed = screening_decisions_parse(decisions)
    if resolve and any(d.maybe for d in typed):
        raise InvalidInput("A resolution is include or exclude, not maybe.", field="decisions")
    if resolve and (unexplained := next((d for d in typed if not d.reason), None)):
        raise InvalidInput(
            f"The resolution of {unexplained.paper!r} needs a reason: why this decision "
            "settles it.",
            field="decisions",
        )
    chosen = _candidates_checked(session, typed, screener=screener, resolve=resolve)
    if resolve:
        _resolutions_record(chosen, screener=screener, who=who)
        counted = {"resolved": len(chosen)}
    else:
        _votes_record(session, chosen, screener=screener, who=who)
        counted = {"recorded": len(chosen)}
    session.save(update_fields=["updated_at"])
    status = screening_status(session=session) or {}
    return {"session_id": str(session.pk), **counted, **status}


def _candidates_checked(
    session: ReviewSession,
    decisions: list[ScreeningDecision],
    *,
    screener: str,
    resolve: bool,
) -> list[tuple[ReviewCandidate, ScreeningDecision]]:
    """Each decision with the search candidate it names; raises InvalidDecision naming
    (at most 20) papers per problem, the first problem found in the order below."""
    candidates = {
        c.paper_id: c for c in session.candidates.filter(source=SEARCH).select_related("paper")
    }
    by_ref = {
        name: pk
        for pk, known in candidates.items()
        for name in (str(pk), known.paper.human_id, known.paper.citekey)
    }
    problems: dict[str, list[int | str]] = {
        "not candidates of this review": [],
        f"already screened by {screener}": [],
        "listed twice": [],
        "not in disagreement (resolve settles records screeners disagree on)": [],
        "already resolved": [],
    }
    unknown, decided, twice, undisputed, resolved = problems.values()
    chosen: list[tuple[ReviewCandidate, ScreeningDecision]] = []
    for decision in decisions:
        ref = decision.paper
        paper_id = by_ref.get(str(ref).strip())
        if paper_id is None:
            unknown.append(ref)
            continue
        candidate = candidates[paper_id]
        if any(c.paper_id == paper_id for c, _ in chosen):
            twice.append(ref)
        elif resolve and not is_disputed(candidate.votes):
            undisputed.append(ref)
        elif resolve and RESOLUTION in candidate.votes:
            resolved.append(ref)
        elif not resolve and candidate.votes.get(screener, MAYBE) != MAYBE:
            decided.append(ref)
        chosen.append((candidate, decision))
    for what, refs in problems.items():
        if refs:
            raise InvalidDecision(
                f"Papers {what}: {refs[:20]}; nothing was recorded.",
                papers=[str(ref) for ref in refs[:20]],
            )
    return chosen


def _resolutions_record(
    chosen: list[tuple[ReviewCandidate, ScreeningDecision]], *, screener: str, who: Attribution
) -> None:
    """The resolutions become the records' status, kept beside the votes (who resolved,
    under RESOLUTION among the voters)."""
    for candidate, decision in chosen:
        resolution = {"decision": decision.decision, "by": screener, "reason": decision.reason}
        candidate.votes = {**candidate.votes, RESOLUTION: resolution}
        candidate.voters = {**candidate.voters, RESOLUTION: _voter(who)}
        candidate.status = Status.INCLUDED if decision.include else Status.EXCLUDED
        candidate.reason = "" if decision.include else decision.reason
    ReviewCandidate.objects.bulk_update(
        [c for c, _ in chosen], ["status", "reason", "votes", "voters"]
    )


SCREENING_FIELDS = (
    "status",
    "reason",
    "screened_order",
    "screened_by",
    "screened_by_user",
    "votes",
)


def _voter(who: Attribution) -> dict[str, Any]:
    """Who a screener is, as kept in ReviewCandidate.voters."""
    return {
        "user": who.username,
        "user_id": getattr(who.user, "pk", None),
        "client": who.client,
        "at": timezone.now().isoformat(timespec="seconds"),
    }


def _votes_record(
    session: ReviewSession,
    chosen: list[tuple[ReviewCandidate, ScreeningDecision]],
    *,
    screener: str,
    who: Attribution,
) -> None:
    """Each vote kept, with who cast it (`voters`); a pending record takes it as its
    status, in screening order. A maybe is kept with its reason and sets nothing; a
    decision replaces the screener's maybe."""
    order = session.candidates.aggregate(last=Max("screened_order"))["last"] or 0
    voter = _voter(who)
    for candidate, decision in chosen:
        candidate.voters = {**candidate.voters, screener: voter}
        reasons = {k: v for k, v in candidate.votes.get(MAYBE_REASONS, {}).items() if k != screener}
        if decision.maybe and decision.reason:
            reasons[screener] = decision.reason
        votes = {k: v for k, v in candidate.votes.items() if k != MAYBE_REASONS}
        candidate.votes = {**votes, screener: decision.decision}
        if reasons:
            candidate.votes[MAYBE_REASONS] = reasons
        if decision.maybe or candidate.status != Status.PENDING:
            continue  # a second opinion: the first screener's decision stands
        order += 1
        candidate.status = Status.INCLUDED if decision.include else Status.EXCLUDED
        candidate.reason = "" if decision.include else (decision.reason or NO_REASON)
        candidate.screened_order = order
        candidate.screened_by = screener
        candidate.screened_by_user = who.user
    ReviewCandidate.objects.bulk_update(
        [c for c, _ in chosen],
        [*SCREENING_FIELDS, "voters"],
    )


def screening_status(
    *,
    session: ReviewSession,
    target_recall: float = stopping.TARGET_RECALL,
    confidence: float = stopping.CONFIDENCE,
) -> dict[str, Any] | None:
    """For get_session: the tallies and stopping report of a review waiting at `screen`
    once record-by-record screening has begun; None otherwise."""
    try:
        _at_screen(session)
    except (NoPendingCheckpoint, SessionComplete, WorkflowFailed):
        return None
    searched = session.candidates.filter(source=SEARCH)
    if not searched.filter(Q(screened_order__isnull=False) | ~Q(votes={})).exists():
        return None  # record-by-record screening has not begun (a maybe begins it)
    screening = _load(session)
    report = screening.report(target_recall=target_recall, confidence=confidence)
    votes = {c.paper_id: c.votes for c in screening.candidates if c.votes}
    titles = {c.paper_id: c.paper.title for c in screening.candidates if c.votes}
    status = {**_tallies(screening.candidates), "stopping": report.as_dict()}
    agreement = agreement_summary(votes, titles)
    if agreement is not None:
        status["agreement"] = agreement
    return status


def screening_unresolved_check(session: ReviewSession) -> None:
    """Before `approve` or `edit` closes the screen checkpoint: InvalidDecision naming the
    records whose screeners disagree and that no one has resolved yet (nothing is
    changed; the checkpoint stays pending)."""
    disputed = [
        paper_id
        for paper_id, votes in session.candidates.filter(source=SEARCH)
        .exclude(votes={})
        .order_by("screened_order")
        .values_list("paper_id", "votes")
        if is_unresolved(votes)
    ]
    if disputed:
        raise InvalidDecision(
            f"{len(disputed)} screening disagreements are unresolved (papers "
            f"{disputed[:20]}): resolve each with screen_decide(..., resolve=true) or in the "
            "admin, then close the screen checkpoint.",
            papers=[str(pk) for pk in disputed[:20]],
        )


def screening_on_approve(session: ReviewSession, pending: list[int]) -> dict[int, str] | None:
    """What `decide approve` at `screen` does to the still-pending records once some were
    screened record by record: excludes them as not screened (paper_id -> reason). None
    when none were (approve includes every candidate).

    Raises InvalidDecision naming the records some screener left "maybe" and no one has
    decided: seen and left open, they are neither screened nor "not screened"."""
    open_maybes = [
        paper_id
        for paper_id, votes in session.candidates.filter(source=SEARCH, status=Status.PENDING)
        .exclude(votes={})
        .order_by("rank")
        .values_list("paper_id", "votes")
        if MAYBE in votes.values()
    ]
    if open_maybes:
        raise InvalidDecision(
            f"{len(open_maybes)} records are only 'maybe' (papers {open_maybes[:20]}): decide "
            "each with screen_decide (include or exclude), then approve.",
            papers=[str(pk) for pk in open_maybes[:20]],
        )
    began = session.candidates.filter(source=SEARCH, screened_order__isnull=False).exists()
    return {paper_id: NOT_SCREENED for paper_id in pending} if began else None


def _tallies(candidates: list[ReviewCandidate]) -> dict[str, int]:
    """The counts by status; `maybe`: of the pending, those some screener left maybe."""
    statuses = [c.status for c in candidates]
    return {
        "total": len(statuses),
        "pending": statuses.count(Status.PENDING),
        "included": statuses.count(Status.INCLUDED),
        "excluded": statuses.count(Status.EXCLUDED),
        "maybe": sum(c.status == Status.PENDING and MAYBE in c.votes.values() for c in candidates),
    }


def _hint(screening: _Screening, report: stopping.StoppingReport, pending: int) -> str:
    sequence = screening.checkpoint.sequence
    finish = (
        f"decide(session_id, 'approve', checkpoint={sequence}) keeps these decisions and "
        f"excludes the {pending} unscreened as '{NOT_SCREENED}'."
    )
    unresolved = sum(is_unresolved(c.votes) for c in screening.candidates if c.votes)
    maybes = _tallies(screening.candidates)["maybe"]
    if maybes:
        finish = f"Decide the {maybes} left maybe first (include or exclude); then {finish}"
    if unresolved:
        finish = (
            f"Resolve the {unresolved} screening disagreements first (get_session lists "
            f"them): screen_decide(..., resolve=true) with a reason; then {finish}"
        )
    if pending == 0:
        return f"All screened. {finish}"
    if report.safe_to_stop:
        return (
            f"Safe to stop: recall >= {report.target_recall:.0%} at {report.confidence:.0%} "
            f"confidence. {finish}"
        )
    if unresolved:
        return (
            "Decide these with screen_decide, then call screen_next again. "
            f"{unresolved} screening disagreements await resolve=true."
        )
    return "Decide these with screen_decide, then call screen_next again."

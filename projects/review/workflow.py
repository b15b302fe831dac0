"""The review workflow's vocabulary and rules: checkpoints, decisions, what each decision
does, and the `CheckpointHandler` seam between the workflow and whoever decides.

    plan ─approve/edit─> search ─> screen ─approve/edit─> [expand] ─any─> [extract] ─approve─> done
     ^ └reject (note)┘               │                 (snowball=true)  (extract=true)   (complete)
     └──────── reject (note) ────────┘

- `plan`: the proposed queries, engines, date range and criteria. `approve` searches with
  them, `edit` changes any of them and searches, `reject` plans again with the note.
- `screen`: the ranked candidates. `approve` includes them all; `edit` takes
  {"include": [...], "exclude": [...], "reasons": {paper: reason}}; `reject` discards
  this round's candidates and plans again with the note.
- `expand` (citation search of the included papers): `approve`/`edit` as at `screen`;
  `reject` excludes every paper it found, with the note as the reason.
- `extract` (data extraction of the included studies, projects/review/extract_stage.py):
  `approve` completes the review, once a form exists and no disagreement between
  extractors is unresolved; `edit` and `reject` are refused (inclusion was settled at
  screening). Skipped when no study is included.

Every accepted decision adds one to the session's `iteration`, so a client can
tell a decision it sent was taken.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from core.errors import DomainError

MAX_NOTE = 2000
MAX_REASON = 500
NOT_SELECTED = "not selected at screening"
NO_REASON = "no reason given"
CITATIONS_REJECTED = "citation search rejected"


class DecisionAction(StrEnum):
    APPROVE = "approve"
    EDIT = "edit"
    REJECT = "reject"


@dataclass(frozen=True)
class Checkpoint:
    """Where the workflow waits: `kind` is plan | screen | expand | extract; `payload` is
    what the person needs to decide (the plan, the counts and engine statuses of a search,
    or the state of the extraction)."""

    kind: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class Decision:
    action: DecisionAction
    data: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    decided_by: str = "agent"


class CheckpointHandler(Protocol):
    """The seam between the workflow and the transport that reaches a person.

    The workflow calls `handle` when it reaches a checkpoint. A handler returns the
    decision, or None when the decision will come later: then the workflow stops there, and
    `set_decision` (called by whoever hears from the person) resumes it. The seed's
    in-memory handler blocked on an event; the one in projects/review/handler.py keeps the
    checkpoint in the database instead, so the decision may reach any process.
    """

    def handle(self, checkpoint: Checkpoint) -> Decision | None: ...

    def set_decision(self, decision: Decision, *, expected_sequence: int | None = None) -> Any: ...


# --- errors (isError results an agent can act on) -------------------------------------------


class InvalidAction(DomainError):
    code = "invalid_action"


class InvalidDecision(DomainError):
    """The decision's data does not fit the checkpoint (unknown papers, bad plan edit)."""

    code = "invalid_decision"


class NoPendingCheckpoint(DomainError):
    code = "no_pending_checkpoint"


class SessionComplete(DomainError):
    code = "session_complete"


class SessionNotComplete(DomainError):
    code = "session_not_complete"


class WorkflowFailed(DomainError):
    code = "workflow_failed"


def decision_parse(
    *, action: str, data: Any = None, note: str | None = None, decided_by: str = "agent"
) -> Decision:
    """A Decision from a tool's or form's arguments; InvalidAction / InvalidDecision."""
    try:
        parsed = DecisionAction(str(action).strip().lower())
    except ValueError:
        allowed = ", ".join(a.value for a in DecisionAction)
        raise InvalidAction(f"Unknown action {action!r}; use one of {allowed}.") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InvalidDecision("data must be an object (or omitted).")
    if data and parsed is not DecisionAction.EDIT:
        raise InvalidDecision(f"data is for action=edit; {parsed.value} takes none.")
    if _has_nul(data):  # no database stores it in text (PostgreSQL refuses it)
        raise InvalidDecision("data contains NUL characters.")
    text = "".join(ch for ch in " ".join(str(note or "").split()) if ch.isprintable())
    if len(text) > MAX_NOTE:
        raise InvalidDecision(f"note is over {MAX_NOTE} characters.")
    return Decision(parsed, data, text, decided_by)


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(key) or _has_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_has_nul(item) for item in value)
    return False


def next_stage(kind: str, action: DecisionAction, *, snowball: bool, extract: bool = False) -> str:
    """The stage a decision at a checkpoint of `kind` leads to. (At `extract` only
    approve is taken: the services refuse the others before asking.)"""
    after_screening = "extract" if extract else "complete"
    if action is DecisionAction.REJECT and kind in ("plan", "screen"):
        return "plan"
    if kind == "plan":
        return "search"
    if kind == "screen":
        return "expand" if snowball else after_screening
    if kind == "expand":
        return after_screening
    return "complete"


# --- screening --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Screening:
    """What a screening decision makes of the pending candidates (by paper_id)."""

    included: list[int]
    excluded: dict[int, str]  # paper_id -> reason


def screening_apply(
    decision: Decision, pending: Sequence[int], resolve: Callable[[Any], int | None]
) -> Screening:
    """Apply approve / edit / reject to the pending candidates (paper_ids, best first).

    `edit` data: `include` lists the papers to keep (the rest are excluded, as not
    selected), or `exclude` lists the papers to drop (the rest are kept); both may be
    given. `reasons` maps an excluded paper to why; a reason for a kept paper is refused
    (it used to exclude that paper silently). Papers are named as anywhere else
    (paper_id, id or citekey); `resolve` turns a reference into a pending paper_id.
    Raises InvalidDecision naming what does not fit."""
    if decision.action is DecisionAction.APPROVE:
        return Screening(list(pending), {})
    if decision.action is DecisionAction.REJECT:
        reason = decision.note or CITATIONS_REJECTED
        return Screening([], {paper_id: reason for paper_id in pending})
    data = decision.data
    unknown_keys = sorted(set(data) - {"include", "exclude", "reasons"})
    if unknown_keys:
        raise InvalidDecision(
            f"Unknown key(s) {', '.join(unknown_keys)}: a screening edit takes include, "
            "exclude and reasons."
        )
    if "include" not in data and "exclude" not in data:
        raise InvalidDecision(
            'A screening edit needs "include" or "exclude" (lists of papers); to keep them '
            "all, approve."
        )
    include = _resolved(data.get("include", []), "include", resolve)
    exclude = _resolved(data.get("exclude", []), "exclude", resolve)
    both = sorted(set(include) & set(exclude))
    if both:
        raise InvalidDecision(f"Papers both included and excluded: {both}.", papers=both)
    reasons_raw = data.get("reasons", {})
    if not isinstance(reasons_raw, dict):
        raise InvalidDecision("reasons must map papers to text.")
    keep_listed_only = "include" in data

    def kept(paper_id: int) -> bool:
        return paper_id in include or (not keep_listed_only and paper_id not in exclude)

    reasons: dict[int, str] = {}
    for ref, text in reasons_raw.items():
        paper_id = _resolved([ref], "reasons", resolve)[0]
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_REASON:
            raise InvalidDecision(f"The reason for {ref!r} must be 1-{MAX_REASON} characters.")
        if kept(paper_id):
            raise InvalidDecision(
                f"{ref!r} is kept: a reason is for excluded papers (list it in exclude)."
            )
        reasons[paper_id] = " ".join(text.split())
    included, excluded = [], {}
    for paper_id in pending:
        if kept(paper_id):
            included.append(paper_id)
        else:
            default = NO_REASON if paper_id in exclude else NOT_SELECTED
            excluded[paper_id] = reasons.get(paper_id, default)
    return Screening(included, excluded)


def _resolved(refs: Any, key: str, resolve: Callable[[Any], int | None]) -> list[int]:
    if not isinstance(refs, list):
        raise InvalidDecision(f"{key} must be a list of papers (paper_id, id or citekey).")
    ids, unknown = [], []
    for ref in refs:
        usable = isinstance(ref, int | str) and not isinstance(ref, bool)
        paper_id = resolve(ref) if usable else None
        if paper_id is None:
            unknown.append(ref)
        elif paper_id not in ids:
            ids.append(paper_id)
    if unknown:
        raise InvalidDecision(
            f"Not among the candidates waiting for this decision: {unknown[:20]}.",
            papers=[str(ref) for ref in unknown[:20]],
        )
    return ids

"""The `CheckpointHandler` kept in the database (docs/REVIEW.md).

An in-process handler would hold a pair of asyncio events. Here a checkpoint is a
row, pending until a decision row answers it, so the step that raised it, the /mcp call
that answers it and the admin page that shows it may all run in different processes.
Both methods run inside the caller's transaction, on a session row it has locked.
"""

from __future__ import annotations

from django.utils import timezone

from core.attribution import actor_label, attribution
from projects.models import ReviewCheckpoint, ReviewDecision, ReviewSession
from projects.review.workflow import Checkpoint, Decision, NoPendingCheckpoint


class DatabaseCheckpointHandler:
    def __init__(self, session: ReviewSession) -> None:
        self.session = session

    def pending(self) -> ReviewCheckpoint | None:
        return self.session.checkpoints.filter(resolved_at__isnull=True).first()

    def handle(self, checkpoint: Checkpoint) -> Decision | None:
        """Record the checkpoint as pending and mark the session as waiting for a person.

        Always None: the decision arrives later, through `set_decision`, from whichever
        process hears it. (A step never raises the same checkpoint twice: raising it is
        part of the step's one commit.)"""
        last = self.session.checkpoints.order_by("-sequence").first()
        ReviewCheckpoint.objects.create(
            session=self.session,
            sequence=(last.sequence + 1) if last else 1,
            kind=checkpoint.kind,
            round=self.session.round,
            payload=checkpoint.payload,
        )
        self.session.status = ReviewSession.Status.WAITING
        return None

    def set_decision(
        self, decision: Decision, *, expected_sequence: int | None = None
    ) -> ReviewCheckpoint:
        """Answer the pending checkpoint; returns it. NoPendingCheckpoint when there is
        none, or when `expected_sequence` names one that is no longer pending (a retried
        call, or a person answering a page that someone else already answered)."""
        pending = self.pending()
        if pending is None:
            raise NoPendingCheckpoint(
                f"Review {self.session.pk} has no checkpoint waiting for a decision "
                f"(it is {self.session.status} at {self.session.stage}).",
                session_id=str(self.session.pk),
                state=self.session.status,
            )
        if expected_sequence is not None and expected_sequence != pending.sequence:
            raise NoPendingCheckpoint(
                f"Checkpoint {expected_sequence} is no longer waiting; checkpoint "
                f"{pending.sequence} ({pending.kind}) is.",
                session_id=str(self.session.pk),
                pending=pending.sequence,
            )
        who = attribution()
        ReviewDecision.objects.create(
            checkpoint=pending,
            action=decision.action.value,
            data=decision.data,
            note=decision.note,
            decided_by=actor_label(decision.decided_by, who)[:150],
            user=who.user,
            client=who.client[:200],
            iteration=self.session.iteration + 1,
        )
        pending.resolved_at = timezone.now()
        pending.save(update_fields=["resolved_at", "updated_at"])
        return pending

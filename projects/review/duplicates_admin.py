"""Grouped versions of reviews in the admin (Projects -> Review grouped versions): each record
a review grouped with a candidate as another version of its work, why, and whether it was
split back out. A person undoes a wrong grouping with the action "Split out of the group",
through the same service as the `split_duplicate` tool (projects/review/dedup.py), as
`admin:<user>`.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from core.errors import DomainError
from projects.models import ReviewDuplicate
from projects.review.dedup import duplicate_split


@admin.register(ReviewDuplicate)
class ReviewDuplicateAdmin(admin.ModelAdmin):
    list_display = ["paper", "grouped_with", "session", "source", "engines", "match", "split"]
    list_filter = ["source", ("split_at", admin.EmptyFieldListFilter)]
    search_fields = ["paper__title", "candidate__paper__title", "match"]
    list_select_related = ["paper", "candidate__paper", "session"]
    actions = ["split_out"]
    readonly_fields = [
        "session", "candidate", "paper", "source", "round", "score", "engines", "queries",
        "cites", "match", "grouped_at", "split_at", "split_by",
    ]  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the record of a grouping stays; splitting undoes it

    @admin.display(description="grouped with")
    def grouped_with(self, row: ReviewDuplicate) -> str:
        return str(row.candidate.paper)

    @admin.display(description="split out")
    def split(self, row: ReviewDuplicate) -> str:
        return f"{row.split_at:%Y-%m-%d %H:%M} by {row.split_by}" if row.split_at else "-"

    @admin.action(
        description="Split out of the group (a candidate of its own)", permissions=["change"]
    )
    def split_out(self, request: HttpRequest, queryset: QuerySet[ReviewDuplicate]) -> None:
        done = 0
        for row in queryset.filter(split_at__isnull=True):
            try:
                duplicate_split(
                    session_id=row.session_id,
                    paper=row.paper_id,
                    split_by=f"admin:{request.user.get_username()}",
                )
            except DomainError as error:
                self.message_user(request, f"{row.paper_id}: {error.message}", messages.ERROR)
                continue
            done += 1
        self.message_user(request, f"Split out {done} records; they are candidates to screen.")

"""The paper list's "Retracted" filter (papers/admin.py lists it): papers flagged by the
retraction watch (papers/retractions.py), by status or all of them."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from papers.models import Paper

ANY_FLAG = "any"


class RetractionFilter(admin.SimpleListFilter):
    title = "retracted"
    parameter_name = "retraction"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        statuses = Paper._meta.get_field("retraction_status").choices or []
        return [(ANY_FLAG, "Any notice"), *((str(k), str(v)) for k, v in statuses)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Paper]) -> QuerySet[Paper]:
        value = self.value()
        if value == ANY_FLAG:  # served by the partial index paper_retraction_idx
            return queryset.exclude(retraction_status="")
        if value:
            return queryset.filter(retraction_status=value)
        return queryset

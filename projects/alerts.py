"""Raising alerts (projects.models.Alert): once per key, whoever notices first."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from papers.models import Paper
from projects.models import Alert, Project


def notify(
    kind: str,
    title: str,
    *,
    key: str,
    body: str = "",
    project: Project | None = None,
    paper: Paper | None = None,
    link: str = "",
    data: dict[str, Any] | None = None,
) -> Alert | None:
    """The alert raised, or None when one with this `key` was raised before."""
    if Alert.objects.filter(key=key).exists():
        return None
    try:
        with transaction.atomic():
            return Alert.objects.create(
                kind=kind, title=title[:300], body=body, project=project, paper=paper,
                link=link[:500], data=data or {}, key=key[:200],
            )  # fmt: skip
    except IntegrityError:  # raised by a concurrent caller meanwhile
        return None

"""Raising alerts (projects.models.Alert): once per key, whoever notices first.

A new alert is also mailed to ALERT_EMAIL_TO (none: no mail) through Django's mail backend
(the console by default, SMTP by the EMAIL_* settings), once the alert is committed; a mail
that cannot be sent is logged and never undoes the alert."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction

from papers.models import Paper
from projects.models import Alert, Project

logger = logging.getLogger(__name__)


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
            alert = Alert.objects.create(
                kind=kind, title=title[:300], body=body, project=project, paper=paper,
                link=link[:500], data=data or {}, key=key[:200],
            )  # fmt: skip
    except IntegrityError:  # raised by a concurrent caller meanwhile
        return None
    if settings.ALERT_EMAIL_TO:
        transaction.on_commit(lambda: alert_mail(alert))
    return alert


def alert_mail(alert: Alert) -> bool:
    """Mail `alert` to ALERT_EMAIL_TO; whether it was sent (failures are logged)."""
    lines = [alert.title, "", alert.body] if alert.body else [alert.title]
    if alert.project_id:
        lines += ["", f"Project: {alert.project_id}"]
    if alert.link:
        lines += ["", f"See: {alert.link}"]
    try:
        send_mail(
            subject=f"[Research MCP] {alert.title}"[:200],
            message="\n".join(lines),
            from_email=None,
            recipient_list=list(settings.ALERT_EMAIL_TO),
        )
    except Exception:  # an SMTP server away: the alert stays in the inbox and the feeds
        logger.exception("Could not mail alert %s", alert.pk)
        return False
    return True

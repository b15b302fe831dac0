"""The audit log as CSV or JSON (docs/AUTH.md, "The audit log"): for the admin's export
actions and `manage.py audit_export`."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from core.models import AuditEntry

COLUMNS = (
    "at", "username", "kind", "client", "action", "model", "object_id", "object_repr",
    "count", "summary", "project_id", "user_id",
)  # fmt: skip
FORMATS = ("csv", "json")


class _Echo:
    def write(self, value: str) -> str:
        return value


def entry_dict(entry: AuditEntry) -> dict[str, Any]:
    row = {name: getattr(entry, name) for name in COLUMNS}
    row["at"] = entry.at.isoformat()
    return row


def entries_filtered(
    *,
    project: str = "",
    user: str = "",
    since: datetime | None = None,
    until: datetime | None = None,
) -> QuerySet[AuditEntry]:
    rows = AuditEntry.objects.order_by("at", "id")
    if project:
        rows = rows.filter(project_id=project)
    if user:
        rows = rows.filter(username=user) if user != "system" else rows.filter(kind="system")
    if since is not None:
        rows = rows.filter(at__gte=since)
    if until is not None:
        rows = rows.filter(at__lt=until)
    return rows


def export_lines(entries: Iterable[AuditEntry], fmt: str) -> Iterator[str]:
    """The entries as CSV (a header, a line each) or JSON (one array), piece by piece so
    a long log streams."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}")
    if fmt == "csv":
        writer = csv.writer(_Echo())
        yield writer.writerow(COLUMNS)
        for entry in entries:
            row = entry_dict(entry)
            yield writer.writerow([_cell(row[name]) for name in COLUMNS])
        return
    yield "["
    for number, entry in enumerate(entries):
        yield ("," if number else "") + "\n" + json.dumps(entry_dict(entry), ensure_ascii=False)
    yield "\n]\n"


def _cell(value: Any) -> Any:
    # A spreadsheet must not run a cell as a formula (CSV injection).
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@"):
        return "'" + value
    return "" if value is None else value

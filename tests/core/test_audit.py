"""The audit log (core/audit.py, docs/AUTH.md "Attribution and the audit log"): every
write, recorded once below every interface, after its transaction commits, with who and
through which client; bounded per transaction; exported as CSV and JSON; the admin's
list, filters and export."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any, cast

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import transaction
from django.test import Client

from core import audit
from core.identity import Principal, acting_as
from core.models import AuditEntry
from papers.models import Paper
from papers.schemas import PaperRecord
from papers.services import papers_upsert
from projects.models import Project

pytestmark = pytest.mark.usefixtures("transactional_db")


@pytest.fixture
def alice() -> User:
    user = User.objects.create_user("alice", password="x")
    audit.flush_all()
    AuditEntry.objects.all().delete()
    return user


def as_token(user: User, name: str = "laptop") -> Any:
    return acting_as(Principal.for_user(user, "api-token", client=f"API token {name}"))


def entries(**filters: Any) -> list[AuditEntry]:
    audit.flush_all()  # what the end of a request, tool call or task does
    return list(AuditEntry.objects.filter(**filters).order_by("id"))


def records(count: int, prefix: str = "Paper") -> list[PaperRecord]:
    return [
        PaperRecord.build(title=f"{prefix} {n} on sparse attention", authors=[f"Author {n}"],
                          year=2020, doi=f"10.9999/audit.{prefix}.{n}")
        for n in range(count)
    ]  # fmt: skip


def test_a_write_names_the_user_the_client_the_object_and_no_values(
    alice: User, make_project: Callable[..., Project]
) -> None:
    AuditEntry.objects.all().delete()
    with as_token(alice):
        project = make_project("Sparse attention", description="secret plans")
    [entry] = entries(model="projects.project")
    assert (entry.username, entry.user_id, entry.kind) == ("alice", alice.pk, "api-token")
    assert entry.client == "API token laptop" and entry.action == "create"
    assert entry.object_id == str(project.pk) and entry.object_repr == "Sparse attention"
    assert entry.project_id == str(project.pk)
    assert "secret" not in json.dumps([vars(e) for e in entries()], default=str)

    with as_token(alice):
        project.description = "changed"
        project.save(update_fields=["description", "updated_at"])
    [update] = entries(model="projects.project", action="update")
    assert update.summary == "fields: description, updated_at"


def test_commands_and_workers_are_the_system_and_a_rollback_leaves_nothing(
    make_paper: Callable[..., Paper],
) -> None:
    AuditEntry.objects.all().delete()
    paper = make_paper("Written by a command")
    created = entries(model="papers.paper")
    assert [(e.action, e.count) for e in created] == [("bulk-create", 1)]
    assert all(e.kind == "system" and e.username == "" and not e.client for e in entries())

    audit.flush_all()
    before = AuditEntry.objects.count()
    with pytest.raises(RuntimeError), transaction.atomic():
        Paper.objects.filter(pk=paper.pk).update(title="Never committed")
        Project.objects.create(pk="rolled-back", name="Rolled back")
        raise RuntimeError
    assert AuditEntry.objects.count() == before
    # The next write is recorded alone, with nothing of the rolled-back transaction.
    Project.objects.create(pk="kept", name="Kept")
    audit.flush_all()
    assert [e.object_repr for e in AuditEntry.objects.order_by("id")[before:]] == ["Kept"]


def test_bulk_writes_are_one_entry_per_table_with_counts_and_columns(alice: User) -> None:
    papers_upsert(records=records(30))
    audit.flush_all()
    AuditEntry.objects.all().delete()
    with as_token(alice), transaction.atomic():
        changed = Paper.objects.filter(title__startswith="Paper").update(year=2021)
    assert changed == 30
    [entry] = entries(model="papers.paper")
    assert (entry.action, entry.count, entry.username) == ("bulk-update", 30, "alice")
    assert entry.summary == "30 rows; columns: year"


def test_an_import_is_counted_not_listed_paper_by_paper(alice: User) -> None:
    AuditEntry.objects.all().delete()
    with as_token(alice), transaction.atomic():
        papers_upsert(records=records(300, "Imported"))
    made = entries(model="papers.paper")
    assert sum(e.count for e in made) == 300
    # One transaction of the import: a handful of entries, not one per paper.
    assert AuditEntry.objects.count() < 30, [(e.model, e.action, e.count) for e in entries()]
    # The search indexes written with it (postings, the lexicon of words) are not data.
    assert not [e.model for e in entries() if "lex" in e.model or "fts" in e.model]


def test_saves_beyond_the_cap_become_one_counting_entry(alice: User, settings: Any) -> None:
    settings.AUDIT_OBJECTS_PER_MODEL = 5
    AuditEntry.objects.all().delete()
    with as_token(alice), transaction.atomic():
        for n in range(12):
            Project.objects.create(pk=f"p{n}", name=f"Project {n}")
    named = entries(model="projects.project", action="create")
    rest = entries(model="projects.project", action="bulk-create")
    assert [e.object_repr for e in named] == [f"Project {n}" for n in range(5)]
    assert [(e.count, e.summary) for e in rest] == [
        (7, "7 more creates of projects.project in the same transaction")
    ]


def test_deleting_a_project_names_it(alice: User, make_project: Callable[..., Project]) -> None:
    project = make_project("Doomed")
    audit.flush_all()
    AuditEntry.objects.all().delete()
    with as_token(alice):
        project.delete()
    [entry] = entries(model="projects.project", action="delete")
    assert (entry.object_repr, entry.username) == ("Doomed", "alice")


def test_switched_off_records_nothing(settings: Any) -> None:
    audit.flush_all()
    settings.AUDIT_ENABLED = False
    AuditEntry.objects.all().delete()
    Project.objects.create(pk="unrecorded", name="Unrecorded")
    audit.flush_all()
    assert AuditEntry.objects.count() == 0


def test_the_command_exports_csv_and_json_filtered(
    alice: User, make_project: Callable[..., Project], tmp_path: Any
) -> None:
    AuditEntry.objects.all().delete()
    with as_token(alice):
        project = make_project("=cmd|' /C calc'!A0")
    make_project("By the system")
    audit.flush_all()
    out = io.StringIO()
    call_command("audit_export", "--format", "json", "--user", "alice", stdout=out)
    rows = json.loads(out.getvalue())
    assert rows and {r["username"] for r in rows} == {"alice"}
    assert {r["project_id"] for r in rows if r["model"] == "projects.project"} == {str(project.pk)}
    target = tmp_path / "audit.csv"
    call_command("audit_export", "--project", str(project.pk), "--output", str(target))
    table = list(csv.DictReader(target.open(encoding="utf-8")))
    assert table and all(r["project_id"] == str(project.pk) for r in table)
    # A spreadsheet does not run a name as a formula.
    assert table[0]["object_repr"].startswith("'=")
    call_command("audit_export", "--user", "system", "--output", str(target))
    assert {r["kind"] for r in csv.DictReader(target.open(encoding="utf-8"))} == {"system"}


def test_the_admin_lists_filters_and_exports(
    alice: User, make_project: Callable[..., Project]
) -> None:
    with as_token(alice):
        project = make_project("Shown")
    make_project("Other")
    audit.flush_all()
    admin = User.objects.create_superuser("root", "root@example.org", "pw")
    client = Client()
    client.force_login(admin)
    page = client.get("/admin/core/auditentry/", {"project": str(project.pk)})
    assert page.status_code == 200
    text = page.content.decode()
    assert "Shown" in text and "alice" in text and "Other</td>" not in text
    page = client.get("/admin/core/auditentry/", {"who": "alice"})
    assert page.status_code == 200 and "Other</td>" not in page.content.decode()
    assert client.get("/admin/core/auditentry/add/").status_code == 403
    selected = [
        str(pk) for pk in AuditEntry.objects.filter(username="alice").values_list("pk", flat=True)
    ]
    exported = client.post(
        "/admin/core/auditentry/", {"action": "export_json", "_selected_action": selected}
    )
    assert exported.status_code == 200
    rows = json.loads(b"".join(cast(Any, exported).streaming_content))
    assert {r["username"] for r in rows} == {"alice"} and len(rows) == len(selected)
    exported = client.post(
        "/admin/core/auditentry/", {"action": "export_csv", "_selected_action": selected}
    )
    assert (
        b"".join(cast(Any, exported).streaming_content)
        .decode()
        .startswith("at,username,kind,client")
    )
    # Staff without the permission do not see it.
    staff = User.objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(staff)
    assert client.get("/admin/core/auditentry/").status_code == 403


def test_an_owner_sees_the_entries_of_the_projects_it_owns_only(
    alice: User, make_project: Callable[..., Project]
) -> None:
    from django.contrib.auth.models import Permission

    with as_token(alice):
        mine = make_project("Mine")  # made by a person bound by roles: its owner
    other = make_project("Not hers")
    audit.flush_all()
    assert AuditEntry.objects.filter(project_id=str(other.pk)).exists()
    alice.is_staff = True
    alice.save()
    alice.user_permissions.add(Permission.objects.get(codename="view_auditentry"))
    client = Client()
    client.force_login(alice)
    page = client.get("/admin/core/auditentry/")
    assert page.status_code == 200
    shown = {str(pk) for pk in page.context["cl"].queryset.values_list("project_id", flat=True)}
    assert shown == {str(mine.pk)}

"""The audit log: every write to the database, by whom, through which client, when, and
what (docs/AUTH.md, "The audit log").

Recorded in one place, below every interface, so none can skip it:

- a database execute wrapper, installed on every connection, sees every INSERT, UPDATE
  and DELETE (ORM saves, bulk_create/bulk_update, QuerySet.update/delete, the imports'
  raw executemany) and counts the rows per table; a `COPY` (new papers of an import on
  PostgreSQL), which it cannot see, is counted by the code that runs it (`record_rows`);
- `post_save` (every model) and `post_delete` (the models people delete one by one,
  `DELETE_TRACKED`) name the objects.

Who is `core.identity`'s principal at the time of the write (outside a request:
`system`). The records of one transaction are written together after it commits (nothing
for a transaction rolled back); outside a transaction, right after the write.

The cost is bounded per transaction: at most AUDIT_OBJECTS_PER_MODEL entries naming
objects per model and action, then one entry counting the rest; writes no signal names
(bulk statements, raw SQL) are one entry per table and action with the row count and the
columns written. Values are never recorded (no secrets, no abstracts): only field names.
"""

from __future__ import annotations

import atexit
import logging
import re
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import connections, transaction
from django.db.backends.signals import connection_created
from django.db.models.signals import post_delete, post_migrate, post_save, pre_migrate
from django.utils import timezone

from core.identity import Principal, current_principal

logger = logging.getLogger(__name__)

AUDIT_TABLE = "core_auditentry"
# Bookkeeping, not data: sessions, migrations, the admin's own change messages, caches.
# And the search indexes, derived from the papers and rebuilt from them (a paper's write is
# recorded; its postings, vectors and passages are not).
SKIPPED_TABLES = frozenset(
    {
        AUDIT_TABLE,
        "django_session",
        "django_migrations",
        "django_admin_log",
        "django_cache",
        "papers_lex_posting",
        "papers_lex_doc",
        "papers_lex_generation",
        "papers_lex_word",
        "papers_paper_fts",
        "papers_paperembedding",
        "papers_paperstrongembedding",
        "papers_passage",
        "papers_passageterm",
    }
)
# Updates of nothing but these columns are bookkeeping (a token's last use, at most once a
# minute per token), not changes.
BOOKKEEPING_COLUMNS = frozenset({"last_used_at"})
# Models people delete one by one (a post_delete receiver makes Django load every row it
# cascades to instead of deleting them in one statement, so it is connected only here;
# other deletes are counted from their SQL).
DELETE_TRACKED = (
    "auth.user",
    "auth.group",
    "research_site.apitoken",
    "papers.paper",
    "papers.collection",
    "projects.project",
    "projects.reviewsession",
    "projects.savedsearch",
    "projects.alert",
    "projects.extractionform",
)
# Attributes that name an object without saying anything secret or long.
NAME_FIELDS = ("citekey", "name", "title", "username", "query", "kind")
# Foreign keys followed (at most this many hops) to find the project a row belongs to.
PROJECT_PATH = ("project", "session", "checkpoint", "form", "saved_search")
PROJECT_MODEL = "projects.project"
SYSTEM = "system"
AUTOCOMMIT_BATCH = 100
AUTOCOMMIT_WAIT = 1.0

_WRITE = re.compile(
    r'^\s*(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?([A-Za-z0-9_]+)"?', re.IGNORECASE
)
_SET_COLUMN = re.compile(r'(?<![.\w"])"(\w+)"\s*=')
_ACTIONS = {"INSERT": "create", "UPDATE": "update", "DELETE": "delete"}


@dataclass
class _Buffer:
    """One connection's records not yet written: objects named by signals and rows
    counted from SQL, for the principal they were made by."""

    principal: Principal | None = None
    objects: list[tuple[str, str, str, str, str, Any]] = field(default_factory=list)
    rows: Counter[tuple[str, str]] = field(default_factory=Counter)
    columns: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    in_transaction: bool = False
    flushing: bool = False
    # Entries of committed writes not yet inserted (outside transactions they are inserted
    # in batches: AUTOCOMMIT_BATCH of them, or AUTOCOMMIT_WAIT seconds after the first).
    done: list[Any] = field(default_factory=list)
    done_since: float = 0.0

    def empty(self) -> bool:
        return not self.objects and not self.rows


_tables: dict[str, str] = {}
_tables_lock = threading.Lock()


_migrating = threading.Event()


def enabled() -> bool:
    return (
        bool(getattr(settings, "AUDIT_ENABLED", True))
        and not settings.MCP_READ_ONLY
        and not _migrating.is_set()
    )


def _migration_started(**_: Any) -> None:
    _migrating.set()  # schema changes and data migrations are not people's writes


def _migration_done(**_: Any) -> None:
    _migrating.clear()


def _model_of_table(table: str) -> str:
    if not _tables:
        with _tables_lock:
            if not _tables:
                for model in apps.get_models(include_auto_created=True):
                    _tables[model._meta.db_table] = model._meta.label_lower
    return _tables.get(table, table)


def _buffer(connection: Any) -> _Buffer:
    buffer = getattr(connection, "_audit_buffer", None)
    if buffer is None:
        buffer = connection._audit_buffer = _Buffer()
    return buffer


def _skipped(table: str) -> bool:
    return table in SKIPPED_TABLES or table in getattr(settings, "AUDIT_SKIP_TABLES", ())


# --- capture -----------------------------------------------------------------------------


def _execute_wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    connection = context["connection"]
    buffer = getattr(connection, "_audit_buffer", None)
    if buffer is not None and not buffer.flushing and not connection.in_atomic_block:
        if not buffer.empty():
            if buffer.in_transaction:
                _reset(buffer)  # a transaction ended without its commit hook: rolled back
            else:
                _autocommit_done(connection, buffer)  # a raw write outside a transaction
        elif buffer.done and time.monotonic() - buffer.done_since >= AUTOCOMMIT_WAIT:
            _write(connection, buffer)
    matched = _WRITE.match(sql) if sql[:12].lstrip()[:1] in ("I", "U", "D", "i", "u", "d") else None
    if matched is None or (buffer is not None and buffer.flushing) or not enabled():
        return execute(sql, params, many, context)
    table = matched.group(2)
    if _skipped(table):
        return execute(sql, params, many, context)
    result = execute(sql, params, many, context)
    verb = matched.group(1).split()[0].upper()
    rows = getattr(context.get("cursor"), "rowcount", -1)
    if verb == "INSERT" and not many and (rows is None or rows <= 0):
        rows = _inserted(sql, params)  # SQLite counts RETURNING rows only once fetched
    elif rows is None or rows < 0:
        rows = len(params) if many and isinstance(params, list | tuple) else 1
    if rows == 0:
        return result
    written: set[str] = set()
    if verb == "UPDATE":
        where = sql.upper().find(" WHERE ")
        written = set(_SET_COLUMN.findall(sql if where < 0 else sql[:where]))
        if written and written <= BOOKKEEPING_COLUMNS:
            return result
    buffer = _note(connection)
    key = (table, _ACTIONS[verb])
    buffer.rows[key] += rows
    if written:
        buffer.columns[key].update(written)
    _schedule(connection, buffer)
    return result


def record_rows(connection: Any, table: str, action: str, rows: int) -> None:
    """Count rows written by a statement the execute wrapper cannot see (a `COPY`, which
    goes through the driver's own cursor), as the wrapper counts an INSERT's: `action`
    "create", "update" or "delete"."""
    if rows <= 0 or not enabled() or _skipped(table):
        return
    buffer = getattr(connection, "_audit_buffer", None)
    if buffer is not None and buffer.flushing:
        return
    buffer = _note(connection)
    buffer.rows[(table, action)] += rows
    _schedule(connection, buffer)


def _inserted(sql: str, params: Any) -> int:
    """The rows of one INSERT statement: its parameters over its columns."""
    start = sql.find("(")
    end = sql.find(")", start)
    columns = sql.count(",", start, end) + 1 if 0 <= start < end else 1
    return max(1, len(params or ()) // columns)


def _note(connection: Any) -> _Buffer:
    """The connection's buffer, ready for a record made by the current principal (the
    records of another one are written first)."""
    buffer = _buffer(connection)
    if buffer.in_transaction and not _hooked(connection):
        _reset(buffer)  # its transaction (or the savepoint that hooked it) rolled back
    principal = current_principal()
    if not buffer.empty() and buffer.principal is not principal:
        _close_unit(connection, buffer)
    buffer.principal = principal
    return buffer


def _schedule(connection: Any, buffer: _Buffer) -> None:
    if not connection.in_atomic_block:
        return  # written by the signal that follows, or before the next statement
    buffer.in_transaction = True
    if not _hooked(connection):
        transaction.on_commit(_hook(connection), using=connection.alias)


def _hook(connection: Any) -> Any:
    hook = getattr(connection, "_audit_hook", None)
    if hook is None:
        hook = connection._audit_hook = lambda: _committed(connection)
    return hook


def _hooked(connection: Any) -> bool:
    hook = _hook(connection)
    return any(entry[1] is hook for entry in connection.run_on_commit)


def _object_record(sender: Any, instance: Any, action: str, using: str, fields: Any) -> None:
    if not enabled():
        return
    meta = sender._meta
    if _skipped(meta.db_table):
        return
    connection = connections[using]
    buffer = _note(connection)
    if buffer.flushing:
        return
    changed = ", ".join(sorted(fields)) if fields else ""
    buffer.objects.append(
        (action, meta.label_lower, str(instance.pk or ""), _name(instance), changed, instance)
    )
    if connection.in_atomic_block:
        _schedule(connection, buffer)
    else:
        _autocommit_done(connection, buffer)


def _on_save(sender: Any, instance: Any, created: bool, using: str, **kwargs: Any) -> None:
    if kwargs.get("raw"):
        return  # fixtures being loaded
    _object_record(
        sender, instance, "create" if created else "update", using, kwargs.get("update_fields")
    )


def _on_delete(sender: Any, instance: Any, using: str, **kwargs: Any) -> None:
    _object_record(sender, instance, "delete", using, None)


def _name(instance: Any) -> str:
    for attribute in NAME_FIELDS:
        value = instance.__dict__.get(attribute)
        if isinstance(value, str) and value:
            return " ".join(value.split())[:200]
    return ""


# --- writing -----------------------------------------------------------------------------


def _reset(buffer: _Buffer) -> None:
    buffer.objects = []
    buffer.rows = Counter()
    buffer.columns = defaultdict(set)
    buffer.in_transaction = False
    buffer.principal = None


def _close_unit(connection: Any, buffer: _Buffer) -> None:
    """The records of one committed unit (a transaction, a write outside one) become
    entries, waiting in `done` to be inserted."""
    if buffer.empty():
        return
    principal = buffer.principal
    objects, rows, columns = buffer.objects, buffer.rows, buffer.columns
    _reset(buffer)
    buffer.flushing = True  # the project look-ups are reads, but not the audit's own
    try:
        entries = _entries(principal, objects, rows, columns)
    except Exception:
        logger.exception("The audit log could not record %d writes", len(objects) + len(rows))
        entries = []
    finally:
        buffer.flushing = False
    if entries and not buffer.done:
        buffer.done_since = time.monotonic()
    buffer.done.extend(entries)


def _write(connection: Any, buffer: _Buffer) -> None:
    if not buffer.done or buffer.flushing or connection.in_atomic_block:
        return
    entries, buffer.done = buffer.done, []
    buffer.flushing = True
    try:
        _insert(connection, entries)
    except Exception:
        logger.exception("The audit log could not write %d entries", len(entries))
    finally:
        buffer.flushing = False


def _committed(connection: Any) -> None:
    """A transaction's commit hook: its entries (and any waiting) are inserted now."""
    buffer = _buffer(connection)
    buffer.in_transaction = False
    _close_unit(connection, buffer)
    _write(connection, buffer)


def _autocommit_done(connection: Any, buffer: _Buffer) -> None:
    """A write outside a transaction: its entries are inserted with the next ones, when
    AUTOCOMMIT_BATCH wait or the first has waited AUTOCOMMIT_WAIT seconds (a save each
    its own commit would otherwise pay a second commit for its entry), or at the end of
    the request, tool call or task."""
    _close_unit(connection, buffer)
    if (
        len(buffer.done) >= AUTOCOMMIT_BATCH
        or time.monotonic() - buffer.done_since >= AUTOCOMMIT_WAIT
    ):
        _write(connection, buffer)


def flush(connection: Any = None) -> None:
    """Insert the connection's waiting entries now (the end of a request, an MCP tool
    call, a Celery task; process exit). Inside a transaction, nothing: its commit does."""
    connection = connection or connections["default"]
    buffer = getattr(connection, "_audit_buffer", None)
    if buffer is None or buffer.flushing or connection.in_atomic_block:
        return
    if buffer.in_transaction:
        _reset(buffer)  # rolled back
    else:
        _close_unit(connection, buffer)
    _write(connection, buffer)


def flush_all(**_: Any) -> None:
    for connection in connections.all(initialized_only=True):
        flush(connection)


def _flush_at_exit() -> None:
    """The last entries of a process that ends; quietly, as the database or the log may
    be gone by then (a test database dropped)."""
    logging.disable(logging.CRITICAL)
    try:
        flush_all()
    except Exception:  # noqa: S110 - nothing is left to report to
        pass


def _who(principal: Principal | None) -> dict[str, Any]:
    if principal is None:
        return {"user_id": None, "username": "", "kind": SYSTEM, "client": ""}
    user = principal.user
    return {
        "user_id": getattr(user, "pk", None),
        "username": user.get_username() if user is not None else principal.username,
        "kind": principal.kind,
        "client": (principal.client or "")[:200],
    }


def _entries(
    principal: Principal | None,
    objects: list[tuple[str, str, str, str, str, Any]],
    rows: Counter[tuple[str, str]],
    columns: dict[tuple[str, str], set[str]],
) -> list[Any]:
    who = {**_who(principal), "at": timezone.now()}
    cap = int(getattr(settings, "AUDIT_OBJECTS_PER_MODEL", 20))
    projects = _Projects()
    entries: list[dict[str, Any]] = []
    named: Counter[tuple[str, str]] = Counter()
    for action, label, pk, name, changed, instance in objects:
        named[(label, action)] += 1
        if named[(label, action)] > cap:
            continue
        summary = f"fields: {changed}" if changed else ""
        entries.append(
            _entry(
                **who,
                action=action,
                model=label,
                object_id=pk[:64],
                object_repr=name,
                summary=summary[:300],
                project_id=projects.of(instance),
            )
        )
    # One project for the whole transaction: its unnamed rows belong to it too.
    seen = {entry["project_id"] for entry in entries}
    shared = seen.pop() if len(seen) == 1 else ""
    for (label, action), count in named.items():
        if count > cap:
            entries.append(
                _entry(
                    **who,
                    action=f"bulk-{action}",
                    model=label,
                    count=count - cap,
                    summary=f"{count - cap} more {action}s of {label} in the same transaction",
                    project_id=shared,
                )
            )
    by_table: dict[str, Counter[str]] = defaultdict(Counter)
    for (table, action), count in rows.items():
        by_table[_model_of_table(table)][action] += count
    for label, actions in by_table.items():
        for action, count in actions.items():
            unnamed = count - named[(label, action)]
            if unnamed <= 0:
                continue
            written = sorted(_columns_of(label, action, columns))
            summary = f"{unnamed} rows" + (f"; columns: {', '.join(written)}" if written else "")
            entries.append(
                _entry(
                    **who,
                    action=f"bulk-{action}",
                    model=label,
                    count=unnamed,
                    summary=summary[:300],
                    project_id=shared,
                )
            )
    return entries


def _columns_of(label: str, action: str, columns: dict[tuple[str, str], set[str]]) -> set[str]:
    found: set[str] = set()
    for (table, what), names in columns.items():
        if what == action and _model_of_table(table) == label:
            found |= names
    return found


COLUMNS = (
    "at", "user_id", "username", "kind", "client", "action", "model", "object_id",
    "object_repr", "count", "summary", "project_id",
)  # fmt: skip


def _entry(**values: Any) -> dict[str, Any]:
    return {"object_id": "", "object_repr": "", "count": 1, "summary": "", **values}


def _insert(connection: Any, entries: list[dict[str, Any]]) -> None:
    """One executemany (Django's bulk_create compiles SQL per object: most of the cost of
    an entry when each save is its own commit)."""
    quote = connection.ops.quote_name
    sql = (
        f"INSERT INTO {quote(AUDIT_TABLE)} ({', '.join(quote(c) for c in COLUMNS)}) "  # noqa: S608
        f"VALUES ({', '.join(['%s'] * len(COLUMNS))})"
    )
    rows = []
    for entry in entries:
        row = [entry[c] for c in COLUMNS]
        row[0] = connection.ops.adapt_datetimefield_value(row[0])
        rows.append(row)
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


class _Projects:
    """The project (pk as text, "" for none) of the objects of one flush, following
    PROJECT_PATH's foreign keys; one query per related row at most, cached."""

    def __init__(self) -> None:
        self.cache: dict[tuple[str, Any], str] = {}

    def of(self, instance: Any, hops: int = 3) -> str:
        meta = instance._meta
        if meta.label_lower == PROJECT_MODEL:
            return str(instance.pk)
        if hops == 0:
            return ""
        for name in PROJECT_PATH:
            try:
                relation = meta.get_field(name)
            except Exception:  # noqa: S112 - the model has no such field
                continue
            if not getattr(relation, "many_to_one", False):
                continue
            key_value = getattr(instance, relation.attname, None)
            if key_value is None:
                continue
            target = relation.related_model
            if target._meta.label_lower == PROJECT_MODEL:
                return str(key_value)
            cached = self.cache.get((target._meta.label_lower, key_value))
            if cached is None:
                related = instance._state.fields_cache.get(name)
                if related is None:
                    related = target._default_manager.filter(pk=key_value).first()
                cached = self.of(related, hops - 1) if related is not None else ""
                self.cache[(target._meta.label_lower, key_value)] = cached
            return cached
        return ""


# --- installation ------------------------------------------------------------------------


def _install_wrapper(connection: Any, **_: Any) -> None:
    if _execute_wrapper not in connection.execute_wrappers:
        connection.execute_wrappers.append(_execute_wrapper)


def install() -> None:
    """Connect the receivers and wrap every connection (core's AppConfig.ready)."""
    connection_created.connect(_install_wrapper, dispatch_uid="core.audit.wrapper")
    for connection in connections.all(initialized_only=True):
        _install_wrapper(connection)
    post_save.connect(_on_save, dispatch_uid="core.audit.save")
    pre_migrate.connect(_migration_started, dispatch_uid="core.audit.pre_migrate")
    post_migrate.connect(_migration_done, dispatch_uid="core.audit.post_migrate")
    for label in DELETE_TRACKED:
        try:
            model = apps.get_model(label)
        except LookupError:
            continue
        post_delete.connect(_on_delete, sender=model, dispatch_uid=f"core.audit.delete.{label}")
    from django.core.signals import request_finished

    request_finished.connect(flush_all, dispatch_uid="core.audit.request_finished")
    from celery.signals import task_postrun

    task_postrun.connect(flush_all, dispatch_uid="core.audit.task_postrun", weak=False)
    atexit.register(_flush_at_exit)

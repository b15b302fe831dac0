"""The papers a search's filters allow, kept between searches while nothing they read has
changed: a year filter's 430k ids at 1M papers took ~46 ms to read at every search.

What a restriction reads is found in its SQL (Django names every table and qualifies
every column): it is kept only if each table it reads has a generation that every change
a filter could see renews (papers migration 0018, projects 0019), and of the papers table
it reads only the columns whose updates renew it. Anything else (the full-text index, a
column no trigger watches) is read at every search, as before.

The generations are read in the statement that reads the ids (one snapshot), and checked
before a kept list answers: a list is never older than the last committed change of what
it read. On PostgreSQL the generations are renewed at the commit, so a transaction that
has written (and sees its own changes first) neither keeps nor is answered from here.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np

from core.sql import wrote_in_this_transaction
from papers import scoping
from papers.models import (
    Author,
    Category,
    Institution,
    Keyword,
    Paper,
    PaperAuthor,
    PaperCategory,
    PaperKeyword,
    PaperPdf,
    Venue,
)

# The papers table's columns whose updates renew its generation (migration 0018).
PAPER_COLUMNS = frozenset(
    {"paper_id", "year", "venue_id", "source", "doi", "pdf_url", "source_url"}
)
# What the kept lists may hold in all, per process (a year filter at 1M papers: 3.4 MB).
MAX_BYTES = 64 << 20
MAX_LISTS = 64

_TABLE = re.compile(r'\b(?:FROM|JOIN)\s+("(\w+)"(?:\s+(?:AS\s+)?"(\w+)")?|\(|\S+)', re.I)
_COLUMN = re.compile(r'"(\w+)"\."(\w+)"')
# An unquoted qualified column: only the derived table lexical.intersection names.
_BARE_COLUMN = re.compile(r'(?<![\w"])([A-Za-z_]\w*)\.(\w+)')
DERIVED = frozenset({"r0"})


@cache
def watched_tables() -> frozenset[str]:
    """Tables with a generation renewed by any insert, delete or update (the papers table
    only by updates of PAPER_COLUMNS)."""
    models = (
        Paper, PaperAuthor, PaperKeyword, PaperCategory, PaperPdf, Venue, Author,
        Institution, Keyword, Category, scoping.membership_model(), scoping.project_model(),
    )  # fmt: skip
    return frozenset(model._meta.db_table for model in models)


def tables_read(sql: str) -> tuple[str, ...] | None:
    """The watched tables `sql` reads, sorted, or None if it reads anything else (another
    table, a papers column no trigger watches, a table it names in a way not parsed)."""
    aliases: dict[str, str] = {}
    for match in _TABLE.finditer(sql):
        whole, table, alias = match.groups()
        if whole == "(":
            continue  # a subquery: its own FROM is matched too
        if table is None or table not in watched_tables():
            return None
        aliases[table] = table
        if alias:
            aliases[alias] = table
    paper_table = Paper._meta.db_table
    for qualifier, column in _COLUMN.findall(sql):
        table = aliases.get(qualifier)
        if table is None or (table == paper_table and column not in PAPER_COLUMNS):
            return None
    if any(qualifier not in DERIVED for qualifier, _ in _BARE_COLUMN.findall(sql)):
        return None
    return tuple(sorted(set(aliases.values()))) or None


def generations_sql(tables: Sequence[str]) -> tuple[str, list[Any]]:
    """Select-list items reading `tables`' generations, for the statement that reads the
    ids (then one snapshot holds both)."""
    each = "(SELECT n FROM papers_table_generation WHERE name = %s)"
    return ", ".join([each] * len(tables)), list(tables)


class _Kept:
    def __init__(self) -> None:
        self.lists: OrderedDict[tuple[Any, ...], tuple[tuple[Any, ...], np.ndarray]] = OrderedDict()
        self.bytes = 0
        self.lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> tuple[tuple[Any, ...], np.ndarray] | None:
        with self.lock:
            found = self.lists.get(key)
            if found is not None:
                self.lists.move_to_end(key)
            return found

    def put(self, key: tuple[Any, ...], generations: tuple[Any, ...], ids: np.ndarray) -> None:
        if ids.nbytes > MAX_BYTES:
            return
        with self.lock:
            old = self.lists.pop(key, None)
            if old is not None:
                self.bytes -= old[1].nbytes
            self.lists[key] = (generations, ids)
            self.bytes += ids.nbytes
            while self.bytes > MAX_BYTES or len(self.lists) > MAX_LISTS:
                _, (_, dropped) = self.lists.popitem(last=False)
                self.bytes -= dropped.nbytes

    def clear(self) -> None:
        with self.lock:
            self.lists.clear()
            self.bytes = 0


_kept = _Kept()


def clear() -> None:
    """Forget every kept list (tests)."""
    _kept.clear()


def key(alias: str, sql: str, params: Sequence[Any]) -> tuple[Any, ...]:
    return ("allowed ids", alias, sql, repr(list(params)))  # repr: any parameter, hashable


def may_keep(cursor: Any) -> bool:
    """Whether lists read on this connection now may be kept or answer (not inside a
    PostgreSQL transaction that has written)."""
    return not wrote_in_this_transaction(cursor.db)


def kept(cursor: Any, sql: str, params: Sequence[Any]) -> np.ndarray | None:
    """The allowed ids kept for this restriction, if nothing they were read from has
    changed since (one statement reads the generations)."""
    found = _kept.get(key(cursor.db.alias, sql, params))
    if found is None:
        return None
    tables = tables_read(sql)
    if tables is None or not may_keep(cursor):
        return None
    generations, ids = found
    items, names = generations_sql(tables)
    cursor.execute(f"SELECT {items}", names)
    return ids if tuple(cursor.fetchone()) == generations else None


def keep(
    cursor: Any, sql: str, params: Sequence[Any], generations: tuple[Any, ...], ids: np.ndarray
) -> None:
    """Keep ids read with these generations (those of tables_read(sql), in its order)."""
    if None in generations or not may_keep(cursor):
        return  # a table without its generation row: nothing would renew it
    _kept.put(key(cursor.db.alias, sql, params), generations, ids)

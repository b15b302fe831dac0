"""Counts the database keeps, so that the whole library's facets read them instead of
grouping every row: each author's paper links (papers migration 0019; at 1M papers the
GROUP BY over 3.4M links took ~0.3 s on SQLite) and the papers per venue and per year
(migration 0020; ~0.4 s each on PostgreSQL at 500k papers).

A value's count is its folded count (the `count` table) plus its changes not folded yet
(the `delta` table, which triggers on the counted table append to). `fold` moves the
changes into the counts; imports call it every `papers.imports.FOLD_EVERY` records and
when they end, so what is pending stays small, and reading it cheap.

Every read takes the folded counts and the pending changes in one statement, so both
databases read them in one snapshot (a fold committing between two statements would count
its changes twice, or not at all).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection, transaction


@dataclass(frozen=True)
class _Kept:
    count: str  # (key..., n): the folded counts
    delta: str  # (id, key..., d): the changes not folded yet
    key: str  # the key's columns, comma-separated
    lock: int  # pg_advisory_xact_lock key of a fold (folds take turns; writers never wait)


_AUTHOR_LINKS = _Kept("papers_author_link_count", "papers_author_link_delta", "author_id",
                      0x6C696E6B73)  # "links"  # fmt: skip
_PAPER_VALUES = _Kept("papers_paper_value_count", "papers_paper_value_delta", "facet, value",
                      0x76616C756573)  # "values"  # fmt: skip
_KEPT = (_AUTHOR_LINKS, _PAPER_VALUES)

# papers_paper_value_count's facets (migration 0020): the paper column each counts.
VENUE, YEAR = 1, 2


@dataclass(frozen=True)
class Candidates:
    """The authors with the most links (`counts`: author id -> links, at least `wanted`
    of them when the library has as many), and `bound`: no author outside them has more
    links than this."""

    counts: dict[int, int]
    bound: int


def author_candidates(wanted: int) -> Candidates:
    """The `wanted` authors with the most links, and a bound for every other author.

    Links, not papers: a paper may list the same author twice, so a count is an upper
    bound of the author's distinct papers (facets.py ranks by them and counts its
    candidates exactly). The pending authors are read whole: their number is that of the
    authors edited since the last fold."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH pending AS (
                SELECT author_id, SUM(d) AS d FROM papers_author_link_delta GROUP BY author_id
            ),
            folded_top AS (
                SELECT author_id, n FROM papers_author_link_count
                ORDER BY n DESC, author_id LIMIT %s
            ),
            considered AS (
                SELECT author_id FROM folded_top UNION SELECT author_id FROM pending
            )
            SELECT c.author_id, COALESCE(f.n, 0) + COALESCE(p.d, 0)
            FROM considered c
            LEFT JOIN papers_author_link_count f ON f.author_id = c.author_id
            LEFT JOIN pending p ON p.author_id = c.author_id
            UNION ALL
            SELECT NULL, CASE WHEN (SELECT COUNT(*) FROM folded_top) < %s THEN 0
                              ELSE (SELECT MIN(n) FROM folded_top) END
            """,
            [wanted, wanted],
        )
        rows = cursor.fetchall()
    folded_cut = next(n for author, n in rows if author is None) or 0
    ranked = sorted(
        ((int(author), int(n)) for author, n in rows if author is not None and n > 0),
        key=lambda row: (-row[1], row[0]),
    )
    chosen, rest = ranked[:wanted], ranked[wanted:]
    # An author outside the folded top without pending changes has at most the top's
    # last count (none when the top holds every folded author); one with pending
    # changes was read above.
    bound = max([folded_cut, *(n for _, n in rest[:1])])
    return Candidates(counts=dict(chosen), bound=int(bound))


def paper_values(facet: int) -> dict[int, int]:
    """Every value of a paper column (VENUE: venue ids, YEAR: years) with its number of
    papers, exact; papers without one are not counted. Read whole: a library has few of
    them (2,600 venues and 60 years in the ACL Anthology)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT value, SUM(n) FROM (
                SELECT value, n FROM papers_paper_value_count WHERE facet = %s
                UNION ALL
                SELECT value, d FROM papers_paper_value_delta WHERE facet = %s
            ) kept GROUP BY value HAVING SUM(n) > 0
            """,
            [facet, facet],
        )
        return {int(value): int(n) for value, n in cursor.fetchall()}


def fold() -> None:
    """Move the pending changes into the folded counts, each table in one transaction.

    PostgreSQL deletes and adds what one snapshot shows (rows of transactions still
    open stay pending); folds take turns on an advisory lock, writers never wait. Then,
    outside a transaction, it VACUUMs the pending tables: their deleted rows stay in the
    table until then, and reading the pending changes read them all (1.2M folded author
    rows at 500k papers: ~0.5 s a read, 1.4 ms after the VACUUM). SQLite has one writer
    at a time: the changes up to the highest id read are moved (deleted rows leave its
    b-tree at once)."""
    for kept in _KEPT:
        _move(kept)
    if connection.vendor == "postgresql" and not connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute(f"VACUUM {', '.join(kept.delta for kept in _KEPT)}")


def _move(kept: _Kept) -> None:
    # The table and column names are this module's constants, never input.
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [kept.lock])
            cursor.execute(
                f"""
                WITH moved AS (DELETE FROM {kept.delta} RETURNING {kept.key}, d)
                INSERT INTO {kept.count} ({kept.key}, n)
                SELECT {kept.key}, SUM(d) FROM moved GROUP BY {kept.key}
                ON CONFLICT ({kept.key}) DO UPDATE SET n = {kept.count}.n + EXCLUDED.n
                """  # noqa: S608
            )
            cursor.execute(f"DELETE FROM {kept.count} WHERE n <= 0")  # noqa: S608
            return
        cursor.execute(f"SELECT MAX(id) FROM {kept.delta}")  # noqa: S608
        (last,) = cursor.fetchone()
        if last is None:
            return
        cursor.execute(
            f"""
            INSERT INTO {kept.count} ({kept.key}, n)
            SELECT {kept.key}, SUM(d) FROM {kept.delta} WHERE id <= %s GROUP BY {kept.key}
            ON CONFLICT ({kept.key}) DO UPDATE SET n = n + excluded.n
            """,  # noqa: S608
            [last],
        )
        cursor.execute(f"DELETE FROM {kept.delta} WHERE id <= %s", [last])  # noqa: S608
        cursor.execute(f"DELETE FROM {kept.count} WHERE n <= 0")  # noqa: S608

"""Three costs on the library search path that grew with the library (issue 37), before and
after their fix, alternating in one process over an existing knowledge base:

1. The query reading's author check: the papers of an author pattern such as
   'Christopher*Manning' (what `understanding._Reader.author_papers` counts for two
   capitalised words), the author table scanned by the pattern (before) or read through
   the lowered names' indexes (after, `filters.authors_matching`).
2. The vector index's freshness check (`VectorIndex.snapshot` once its second is up):
   the table's count and newest `updated_at` (before) or its generation row, migration
   0014 (after).
3. `papers.search.local.local_search(query, filters, limit=20)`, what `search_papers` runs
   for the library, over queries naming an author (the author queries of
   benchmarks/data/understanding/acl_queries.json and 'Given Family topic' queries made
   from the library's authors), unfiltered and with `date_from=2018`, before (the three
   old forms patched in) and after. The freshness check is paid at most once a second there.
4. The reading's title check of a one-word name (`understanding._Reader.title_mentions`,
   for 'Family topic' and 'topic by family'): a LIKE over every title (before) or the
   titles of the papers the postings list under the name's term (after); alone, with the
   bound the reader gives it, and through `local_search` over such queries (only this
   check swapped). Both forms must count alike for every name tried, up to the bound and
   in full, or the script stops.

    RESEARCH_DIRECTORY=KB benchmarks/bench_author_freshness.py [--queries 60] [--rounds 200]

KB is a knowledge base with papers and vectors (`manage.py import_jsonl FILE` builds one);
it is only read. Each measurement alternates before and after (the order flipped every
round) and prints p50/p95 in ms and the ratio after/before of the p50s, from this one run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
QUERIES = ROOT / "benchmarks" / "data" / "understanding" / "acl_queries.json"


def pct(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def alternate(
    rounds: int, before: Callable[[int], object], after: Callable[[int], object]
) -> tuple[list[float], list[float]]:
    """Milliseconds of `before(i)` and `after(i)` for i in range(rounds), in turn."""
    times: dict[str, list[float]] = {"before": [], "after": []}
    for i in range(rounds):
        order = [("before", before), ("after", after)]
        if i % 2:
            order.reverse()
        for name, run in order:
            started = time.perf_counter()
            run(i)
            times[name].append((time.perf_counter() - started) * 1000)
    return times["before"], times["after"]


def row(label: str, before: list[float], after: list[float]) -> str:
    b50, b95, a50, a95 = pct(before, 0.5), pct(before, 0.95), pct(after, 0.5), pct(after, 0.95)
    return (
        f"| {label} | {len(before)} | {b50:.2f} | {b95:.2f} | {a50:.2f} | {a95:.2f} "
        f"| {a50 / b50:.3f} | {a95 / b95:.3f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=60, help="generated name queries")
    parser.add_argument("--rounds", type=int, default=200, help="rounds of the two checks")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if not os.environ.get("RESEARCH_DIRECTORY"):
        sys.exit("Set RESEARCH_DIRECTORY to a knowledge base with papers.")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db import connection
    from django.db.models import Count, F, Max, Q

    from papers.models import Author, Paper, PaperEmbedding
    from papers.search import filters as search_filters
    from papers.search import understanding
    from papers.search.filters import GlobLike, glob_to_like
    from papers.search.local import local_search, search_filters_build
    from papers.search.tiers import current_tiers
    from papers.search.types import SearchFilters
    from papers.search.vector_index import VectorIndex, vector_index

    new_authors = search_filters.authors_matching
    new_title_mentions = understanding._Reader.title_mentions
    new_generation = VectorIndex._table_generation
    new_refreshed = VectorIndex._refreshed

    def old_refreshed(self: VectorIndex, current: Any, model: Any) -> Any:
        """The check before migration 0014: the count and newest updated_at, every time
        (the snapshot's generation is left as it was, so 'after' runs are not charged
        for a 'before' run that came first)."""
        table = self._table.objects.filter(model=model.name)
        state = table.aggregate(count=Count("*"), latest=Max("updated_at"))
        return self._compared(current, model, table, state["count"], state["latest"])

    def old_authors(name: str) -> Any:
        if search_filters.has_wildcard(name):
            like = glob_to_like(name)
            return Author.objects.filter(
                Q(GlobLike(F("name"), like)) | Q(GlobLike(F("family_name"), like))
            )
        return new_authors(name)

    def old_title_mentions(self: Any, word: str, most: int) -> int:
        """The title check before the postings: the pattern over every title the LIKE finds."""
        pattern = re.compile(rf"(?<!\w){re.escape(word)}(?!\w)", re.IGNORECASE)
        found = 0
        titles = self.papers().filter(title__icontains=word).values_list("title", flat=True)
        for title in titles.iterator(chunk_size=500):
            found += bool(pattern.search(title))
            if found > most:
                break
        return found

    def use_titles(old: bool) -> None:
        understanding._Reader.title_mentions = old_title_mentions if old else new_title_mentions  # type: ignore[method-assign]

    def use(old: bool) -> None:
        search_filters.authors_matching = old_authors if old else new_authors  # type: ignore[assignment]
        VectorIndex._refreshed = old_refreshed if old else new_refreshed  # type: ignore[method-assign]
        use_titles(old)

    load_start = os.getloadavg()[0]
    papers, vectors = Paper.objects.count(), PaperEmbedding.objects.count()
    rng = random.Random(args.seed)
    # Authors with at least two papers, ASCII capitalised given and family names.
    candidates = [
        (given.split()[0], family)
        for given, family in Author.objects.annotate(n=Count("paper_links"))
        .filter(n__gte=2)
        .exclude(given_name="")
        .values_list("given_name", "family_name")
        if given.split()
        and given.split()[0].isascii()
        and given.split()[0][:1].isupper()
        and len(given.split()[0]) > 1
        and family.isascii()
        and family[:1].isupper()
        and " " not in family
    ]
    rng.shuffle(candidates)
    topics = ["parsing", "translation", "summarization", "dialogue", "embeddings", "tagging"]
    generated = [
        f"{given} {family} {rng.choice(topics)}" for given, family in candidates[: args.queries]
    ]
    labelled = [
        q["query"] for q in json.loads(QUERIES.read_text())["queries"] if q["expect"]["filters"]
    ]
    labelled = [q for q in labelled if any(w[:1].isupper() for w in q.split())]
    queries = labelled + generated
    patterns = [f"{given}*{family}" for given, family in candidates[: args.queries]]

    # 1. the author check's statement, as the reader runs it.
    reader = understanding._Reader("", None, None)

    def count_papers(old: bool) -> Callable[[int], object]:
        def run(i: int) -> object:
            use(old)
            return search_filters.apply_filters(
                reader.papers(), SearchFilters(author=patterns[i % len(patterns)])
            ).count()

        return run

    for i in range(len(patterns)):  # same answers
        assert count_papers(True)(i) == count_papers(False)(i), patterns[i]
    author_before, author_after = alternate(
        max(args.rounds, len(patterns)), count_papers(True), count_papers(False)
    )

    # 2. the freshness check, as a search pays it once its second is up.
    model = current_tiers().first.model
    index = vector_index()
    index.snapshot(model)

    def check(old: bool) -> Callable[[int], object]:
        def run(i: int) -> object:
            use(old)
            index.invalidate()
            return index.snapshot(model)

        return run

    fresh_before, fresh_after = alternate(args.rounds, check(True), check(False))
    table = PaperEmbedding.objects.filter(model=model.name)
    raw_before, raw_after = alternate(
        args.rounds,
        lambda i: table.aggregate(count=Count("*"), latest=Max("updated_at")),
        lambda i: new_generation(index),
    )

    # 3. local_search, queries naming an author, unfiltered and since 2018.
    filters = {"none": None, "date_from=2018": search_filters_build(date_from="2018")}
    searched: dict[str, tuple[list[float], list[float]]] = {}
    for query in queries[:5]:  # warm-up
        local_search(query=query, limit=20)
    for name, chosen in filters.items():

        def search(old: bool, chosen: Any = chosen) -> Callable[[int], object]:
            def run(i: int) -> object:
                use(old)
                return local_search(query=queries[i % len(queries)], filters=chosen, limit=20)

            return run

        searched[name] = alternate(len(queries), search(True), search(False))
    use(False)

    # 4. the title check of a one-word name, alone and through local_search.
    families = [family for _, family in candidates[: args.queries]]
    bounds = [int(reader.author_papers(f) * understanding.TITLE_SHARE) for f in families]
    for family, most in zip(families, bounds, strict=True):  # same answers
        for bound in (most, 10**9):
            old = old_title_mentions(reader, family, bound)
            assert old == new_title_mentions(reader, family, bound), (family, bound)

    def mentions(old: bool) -> Callable[[int], object]:
        check = old_title_mentions if old else new_title_mentions

        def run(i: int) -> object:
            return check(reader, families[i % len(families)], bounds[i % len(bounds)])

        return run

    titles_before, titles_after = alternate(
        max(args.rounds, len(families)), mentions(True), mentions(False)
    )
    named = [f"{family} {rng.choice(topics)}" for family in families]
    named += [f"{rng.choice(topics)} by {family.lower()}" for family in families]

    def search_named(old: bool) -> Callable[[int], object]:
        def run(i: int) -> object:
            use_titles(old)
            return local_search(query=named[i % len(named)], limit=20)

        return run

    named_before, named_after = alternate(len(named), search_named(True), search_named(False))
    use_titles(False)

    # 5. the slowest statements of the searches after, with their plans. (A statement's
    # time is its execute(): rows fetched later, by an iterator, are not in it.)
    statements: dict[str, list[Any]] = {}

    def timed(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            spent = (time.perf_counter() - started) * 1000
            shape = " ".join(sql.split())
            entry = statements.setdefault(shape, [0.0, 0, sql, params])
            entry[0], entry[1] = max(entry[0], spent), entry[1] + 1
            if spent >= entry[0]:
                entry[2], entry[3] = sql, params

    with connection.execute_wrapper(timed):
        for query in queries + named:
            for chosen in filters.values():
                local_search(query=query, filters=chosen, limit=20)

    print(f"{papers} papers, {vectors} first-tier vectors, {connection.vendor};")
    print(
        f"load average (1 min) {load_start:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end.\n"
    )
    print("| measured (ms) | calls each | before p50 | before p95 | after p50 | after p95 |"
          " after/before p50 | after/before p95 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    print(row("author pattern's papers counted ('Given*Family')", author_before, author_after))
    print(row("freshness check (VectorIndex.snapshot, second up)", fresh_before, fresh_after))
    print(row("freshness statement alone (count+max / generation)", raw_before, raw_after))
    for name, (before, after) in searched.items():
        print(row(f"local_search, author queries, filter {name}", before, after))
    print(f"\n{len(queries)} queries ({len(labelled)} labelled, {len(generated)} generated); "
          f"means before/after of local_search: "
          + ", ".join(f"{n} {statistics.mean(b):.1f}/{statistics.mean(a):.1f}"
                      for n, (b, a) in searched.items()))  # fmt: skip
    print("\n| measured (ms) | calls each | before p50 | before p95 | after p50 | after p95 |"
          " after/before p50 | after/before p95 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    print(row("title check of a one-word name (title_mentions)", titles_before, titles_after))
    print(row("local_search, 'Family topic' / 'topic by family'", named_before, named_after))
    print(
        f"\n{len(families)} names, the same title counts before and after (up to the "
        f"reader's bound and in full); {len(named)} queries."
    )
    print("\nSlowest statements of those searches, after (the slowest run of each):\n")
    for spent, runs, sql, params in sorted(statements.values(), key=lambda e: -e[0])[:4]:
        prefix = "EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN "
        with connection.cursor() as cursor:
            cursor.execute(prefix + sql, params)
            plan = " | ".join(str(r[-1] if connection.vendor == "sqlite" else r[0])
                              for r in cursor.fetchall())  # fmt: skip
        print(
            f"- {spent:.1f} ms ({runs} runs): `{' '.join(sql.split())[:300]}`\n  plan: {plan[:400]}"
        )


if __name__ == "__main__":
    main()

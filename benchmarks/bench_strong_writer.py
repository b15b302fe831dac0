"""How fast the second semantic tier fills, before and after the writer's tuning, and what
a query pays for it.

Imports SciFact (5,183 abstracts) into a temporary knowledge base through the services,
embeds the first tier, and picks `--papers` of them (seeded). The other papers are given
placeholder second-tier vectors, so only the picked ones are missing. Then, alternating
in the same run (the machine is shared: the ratio is the figure, absolute rates move with
the load, printed beside each cell), the picked papers' second-tier vectors are deleted
and rebuilt through the paths a user's library takes:

- thread: the in-process background writer (`strong_tier.backfill().wake()`, what a
  write or a search starts in the embedded default), timed until it is idle again;
- command: `manage.py reindex_embeddings --tier strong` (missing papers only).

"before" is the packaged model as the writer ran it until now (`minilm-l6-int8`: the
package's file, whose int8 weights are cast to float32 inside the graph, 8 texts a call);
"after" is the default (`minilm-l6-q8`: the same weights quantised again for integer
arithmetic, one text a call); both with the writer's chunk and threads
(strong_tier.STRONG_CHUNK, STRONG_EMBEDDING_THREADS: one per core) and 256 tokens. The
cosine between their vectors is printed. Each cell also gives papers per CPU second of
the whole process (every thread), which the load moves far less than papers/s.

Query side, on the whole library with every paper in both tiers: each model's query
encoder (alternating per claim) over the test claims, and `local_search` as
`search_papers` calls it, full text alone (rerank off) and the default hybrid (rerank
on), alternating per query.

    nice -n 10 .venv/bin/python benchmarks/bench_strong_writer.py [--papers 384] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_semantic_tiers import DEFAULT_CORPUS, MAX_QUERY, import_corpus, load_scifact

ROOT = Path(__file__).resolve().parent.parent
GOAL_PAPERS_PER_S = 60.0
GOAL_QUERY_MS = 10.0
GOAL_HYBRID_RATIO = 1.5


def setup_django(directory: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")
    os.environ["RESEARCH_DIRECTORY"] = directory
    os.environ["EMBEDDINGS_ENABLED"] = "false"  # the import embeds nothing; we do, timed
    for name in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"):
        os.environ.pop(name, None)  # the embedded default: the in-process writer
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def load_text() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--papers", type=int, default=384)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-strong-") as directory:
        setup_django(directory)
        import numpy as np
        from django.conf import settings
        from django.core.management import call_command

        from papers.models import Paper, PaperStrongEmbedding
        from papers.search import embedding, semantic, strong_tier, vector_index
        from papers.search.local import local_search

        docs, queries, qrels = load_scifact(args.corpus, "test")
        import_corpus(docs)
        ids = sorted(Paper.objects.values_list("pk", flat=True))
        semantic.embed_papers(ids, force=True)
        configs = {"before": "minilm-l6-int8", "after": embedding.DEFAULT_STRONG_MODEL}
        models = {}
        for name, key in configs.items():
            settings.EMBEDDING_MODEL_STRONG = key
            loaded = embedding.load_strong_model()
            if loaded is None:
                sys.exit(f"{key} is off: {embedding.strong_tier_unavailable_reason()}")
            models[name] = loaded
        picked = sorted(random.Random(7).sample(ids, min(args.papers, len(ids))))
        rest = sorted(set(ids) - set(picked))
        placeholder = np.zeros(384, dtype="<f4")
        placeholder[0] = 1.0
        PaperStrongEmbedding.objects.bulk_create(
            PaperStrongEmbedding(
                paper_id=pk,
                model=models["after"].name,
                dimensions=384,
                vector=placeholder.tobytes(),
                text_hash="placeholder",
            )
            for pk in rest
        )
        settings.EMBEDDINGS_ENABLED = True

        def apply(name: str) -> None:
            # One second-tier row a paper: the placeholders carry the cell's model.
            settings.EMBEDDING_MODEL_STRONG = configs[name]
            PaperStrongEmbedding.objects.filter(paper_id__in=rest).update(model=models[name].name)

        def by_thread() -> None:
            strong_tier.backfill().wake()
            if not strong_tier.backfill().wait_idle(timeout=3600):
                sys.exit("the background writer did not finish within an hour")

        def by_command() -> None:
            call_command(
                "reindex_embeddings", tier="strong", no_progress=True, stdout=open(os.devnull, "w")
            )

        paths = {"thread": by_thread, "command": by_command}
        cells: list[tuple[str, str, float, float, str]] = []
        vectors: dict[str, np.ndarray] = {}
        print(f"SciFact: {len(ids)} papers, {len(picked)} re-embedded per cell", file=sys.stderr)
        for round_number in range(args.rounds):
            order = ["before", "after"] if round_number % 2 == 0 else ["after", "before"]
            for name in order:
                apply(name)
                model = models[name]
                for path, run in paths.items():
                    PaperStrongEmbedding.objects.filter(paper_id__in=picked).delete()
                    started, cpu = time.perf_counter(), time.process_time()
                    run()
                    seconds = time.perf_counter() - started
                    cpu = time.process_time() - cpu  # every thread of this process
                    done = PaperStrongEmbedding.objects.filter(
                        paper_id__in=picked, model=model.name
                    ).count()
                    if done != len(picked):
                        sys.exit(f"{name}/{path}: {done} of {len(picked)} papers embedded")
                    rate = len(picked) / seconds
                    cells.append((name, path, rate, len(picked) / cpu, load_text()))
                    print(f"  {name} {path}: {rate:.1f} papers/s, {len(picked) / cpu:.1f} a CPU "
                          "second", file=sys.stderr, flush=True)  # fmt: skip
                    if name not in vectors:
                        rows = PaperStrongEmbedding.objects.filter(
                            paper_id__in=picked, model=model.name
                        )
                        stored = dict(rows.values_list("paper_id", "vector"))
                        vectors[name] = np.stack(
                            [np.frombuffer(stored[pk], dtype="<f4") for pk in picked]
                        )
        apply("after")

        # Query side: every paper in both tiers (the picked ones real, the rest placeholders:
        # the cost of scoring does not depend on the values).
        vector_index.vector_index().reset()
        vector_index.strong_vector_index().reset()
        claims = [queries[q][:MAX_QUERY] for q in list(qrels)[: args.queries]]
        encode_ms: dict[str, list[float]] = {name: [] for name in models}
        for model in models.values():
            model.encode_query("warm up")
        for number, claim in enumerate(claims):
            for name in list(models) if number % 2 == 0 else list(models)[::-1]:
                started = time.perf_counter()
                models[name].encode_query(claim)
                encode_ms[name].append((time.perf_counter() - started) * 1000)
        search_ms: dict[bool, list[float]] = {False: [], True: []}
        for rerank in (False, True):
            local_search(query="warm up", limit=20, rerank=rerank)
        for number, claim in enumerate(claims):
            for rerank in (False, True) if number % 2 == 0 else (True, False):
                started = time.perf_counter()
                local_search(query=claim, limit=20, rerank=rerank)
                search_ms[rerank].append((time.perf_counter() - started) * 1000)

    def median(name: str, path: str, column: int = 2) -> float:
        values = [c[2] if column == 2 else c[3] for c in cells if c[0] == name and c[1] == path]
        return statistics.median(values)

    print(f"SciFact, {len(picked)} abstracts re-embedded per cell (title + abstract, "
          f"256 tokens), SQLite, {args.rounds} rounds alternating before/after; "
          f"{os.cpu_count()} cores; 1-min load average after each cell.")  # fmt: skip
    print()
    print("| model | path | papers/s per round (load) | median papers/s | papers per CPU second |")
    print("|---|---|---|---|---|")
    for name, key in configs.items():
        for path in paths:
            shown = ", ".join(
                f"{c[2]:.1f} ({c[4]})" for c in cells if c[0] == name and c[1] == path
            )
            print(
                f"| {name}: `{key}` | {path} | {shown} | {median(name, path):.1f} "
                f"| {median(name, path, 3):.1f} |"
            )
    print()
    cosines = (vectors["before"] * vectors["after"]).sum(axis=1)
    thread_ratio = median("after", "thread") / median("before", "thread")
    command_ratio = median("after", "command") / median("before", "command")
    after_rate = median("after", "thread")
    cpu_ratio = median("after", "thread", 3) / median("before", "thread", 3)
    print(f"- after ÷ before, papers/s: thread {thread_ratio:.2f}×, command "
          f"{command_ratio:.2f}×; papers per CPU second (thread): {cpu_ratio:.2f}×")  # fmt: skip
    print(f"- vectors, after against before (two quantisations of one model): cosine min "
          f"{cosines.min():.4f}, mean {cosines.mean():.4f}")  # fmt: skip
    met = "met" if after_rate >= GOAL_PAPERS_PER_S else "not met"
    print(f"- goal ≥ {GOAL_PAPERS_PER_S:.0f} papers/s (the background writer, on this "
          f"shared machine): {after_rate:.1f}, **{met}**")  # fmt: skip
    for name, key in configs.items():
        p50 = statistics.median(encode_ms[name])
        met = "met" if p50 <= GOAL_QUERY_MS else "not met"
        print(f"- query encoding, `{key}` ({name}), {len(claims)} SciFact claims alternating: "
              f"p50 {p50:.1f} ms, p95 {np.percentile(encode_ms[name], 95):.1f} ms; goal ≤ "
              f"{GOAL_QUERY_MS:.0f} ms p50: **{met}**")  # fmt: skip
    full, hybrid = statistics.median(search_ms[False]), statistics.median(search_ms[True])
    met = "met" if hybrid <= GOAL_HYBRID_RATIO * full else "not met"
    print(f"- `local_search` (top 20, {len(ids)} papers, both tiers complete) p50: full text "
          f"alone {full:.1f} ms, hybrid {hybrid:.1f} ms ({hybrid / full:.2f}×); goal ≤ "
          f"{GOAL_HYBRID_RATIO}×: **{met}**")  # fmt: skip


if __name__ == "__main__":
    main()

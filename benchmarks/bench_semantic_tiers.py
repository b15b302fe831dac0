"""The two semantic tiers on SciFact: quality, embedding speed and query time.

Imports SciFact (5,183 abstracts) into a temporary knowledge base through the services,
embeds every paper with the first tier (EMBEDDING_MODEL) and the second
(EMBEDDING_MODEL_STRONG) the way the product does (semantic.embed_papers,
strong_tier.embed_papers_strong), then scores the claims of `qrels/<split>.tsv` through
the functions the search tools call:

- semantic: `semantic.semantic_search(top_k=100)`, what `search_papers_semantic` returns;
- hybrid: `local.local_search(limit=100, rerank=True)`, what `search_papers` with
  `rerank=true` (and REST /api/search) returns: `semantic.hybrid_search`.

Rows: the first tier alone (second tier off), the second tier complete, and the second
tier at partial coverage (`--coverage`: that share of papers keep their second-tier
vectors, a seeded random choice; the rest are ranked by the first tier mapped onto the
second's scale, papers/search/tiers.py). Tune on `--split train` only.

    .venv/bin/python benchmarks/bench_semantic_tiers.py [--split test|train]
        [--coverage 0.25,0.5,0.75] [--limit-queries N] [--corpus ../shared/corpus/scifact]

Run it under `nice -n 10` on a shared machine: the second tier embeds at ~10-20 papers/s
a core, about 5-8 minutes for SciFact.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus" / "scifact"
MAX_QUERY = 500  # the search tools' query limit (no SciFact claim is longer)


def setup_django(directory: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")
    os.environ["RESEARCH_DIRECTORY"] = directory
    # Import without background embedding: the benchmark embeds explicitly and times it.
    os.environ["EMBEDDINGS_ENABLED"] = "false"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def load_scifact(corpus: Path, split: str) -> tuple[list[dict], dict[str, str], dict[str, dict]]:
    docs = [json.loads(line) for line in (corpus / "corpus.jsonl").open(encoding="utf-8")]
    queries = {}
    for line in (corpus / "queries.jsonl").open(encoding="utf-8"):
        item = json.loads(line)
        queries[item["_id"]] = item["text"]
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate((corpus / "qrels" / f"{split}.tsv").open(encoding="utf-8")):
        parts = line.strip().split("\t")
        if number == 0 and not parts[-1].isdigit():
            continue  # header
        qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return docs, queries, qrels


def import_corpus(docs: list[dict]) -> dict[int, str]:
    """Upsert every abstract; returns paper id -> SciFact doc id."""
    from papers.models import PaperIdentifier
    from papers.schemas import PaperRecord
    from papers.services import papers_upsert

    for start in range(0, len(docs), 1000):
        papers_upsert(
            records=[
                PaperRecord.build(
                    title=d["title"] or f"SciFact {d['_id']}",
                    abstract=d["text"],
                    identifiers={"scifact": d["_id"]},
                    preferred_citekey=f"scifact{d['_id']}",
                )
                for d in docs[start : start + 1000]
            ]
        )
    return dict(PaperIdentifier.objects.filter(scheme="scifact").values_list("paper_id", "value"))


def ndcg_at_10(ranked: Sequence[str], relevant: dict[str, int]) -> float:
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at_100(ranked: Sequence[str], relevant: dict[str, int]) -> float:
    wanted = {doc for doc, grade in relevant.items() if grade > 0}
    return len(wanted & set(ranked[:100])) / len(wanted) if wanted else 0.0


def evaluate(
    rank: Callable[[str], list[int]],
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    mapping: dict[int, str],
) -> tuple[float, float, float]:
    """(nDCG@10, Recall@100, median ms per query)."""
    ndcgs, recalls, times = [], [], []
    for qid, relevant in qrels.items():
        started = time.perf_counter()
        ids = rank(queries[qid])
        times.append((time.perf_counter() - started) * 1000)
        ranked = [mapping[pk] for pk in ids if pk in mapping]
        ndcgs.append(ndcg_at_10(ranked, relevant))
        recalls.append(recall_at_100(ranked, relevant))
    return statistics.fmean(ndcgs), statistics.fmean(recalls), statistics.median(times)


def semantic_ids(text: str) -> list[int]:
    """What search_papers_semantic returns (top 100)."""
    from papers.search import semantic

    page = semantic.semantic_search(query=text[:MAX_QUERY], top_k=100)
    return [hit.record["paper_id"] for hit in page.hits]


def hybrid_ids(text: str) -> list[int]:
    """What search_papers with rerank=true (and REST /api/search) returns (top 100)."""
    from papers.search.local import local_search

    page = local_search(query=text[:MAX_QUERY], limit=100, rerank=True)
    return [hit.record["paper_id"] for hit in page.hits]


def reset_indexes() -> None:
    from papers.search import vector_index

    vector_index.vector_index().reset()
    vector_index.strong_vector_index().reset()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--split", choices=["test", "train"], default="test")
    parser.add_argument("--coverage", default="0.25,0.5,0.75")
    parser.add_argument("--limit-queries", type=int, default=0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-tiers-") as directory:
        setup_django(directory)
        from django.conf import settings

        from papers.models import Paper, PaperStrongEmbedding
        from papers.search import embedding, semantic, strong_tier

        docs, queries, qrels = load_scifact(args.corpus, args.split)
        if args.limit_queries:
            qrels = dict(list(qrels.items())[: args.limit_queries])
        mapping = import_corpus(docs)
        ids = list(Paper.objects.values_list("pk", flat=True))
        print(f"SciFact {args.split}: {len(qrels)} claims, {len(ids)} abstracts", flush=True)

        first = embedding.load_model()
        outcome = semantic.embed_papers(ids, force=True)
        first_speed = outcome.embedded / outcome.seconds
        print(f"first tier {first.name}: {first_speed:.0f} papers/s", flush=True)
        strong_key = settings.EMBEDDING_MODEL_STRONG or embedding.DEFAULT_STRONG_MODEL
        settings.EMBEDDING_MODEL_STRONG = strong_key
        second = embedding.load_strong_model()
        if second is None:
            sys.exit(f"the second tier is off: {embedding.strong_tier_unavailable_reason()}")
        outcome = strong_tier.embed_papers_strong(ids, force=True)
        second_speed = outcome.embedded / outcome.seconds
        print(f"second tier {second.name}: {second_speed:.1f} papers/s (one thread)", flush=True)

        rows: list[tuple[str, str, str, float, float, float, float, str]] = []

        def measure(tier: str, coverage: str, speed: float) -> None:
            for mode, rank in (("semantic", semantic_ids), ("hybrid", hybrid_ids)):
                reset_indexes()
                rank("warm up")  # model and index loads are not query time
                ndcg, recall, ms = evaluate(rank, queries, qrels, mapping)
                rows.append((mode, tier, coverage, ndcg, recall, ms, speed, ""))
                print(f"  {mode} {tier} {coverage}: {ndcg:.4f} / {recall:.3f}", flush=True)

        settings.EMBEDDING_MODEL_STRONG = ""
        measure(f"first: {first.name}", "-", first_speed)
        settings.EMBEDDING_MODEL_STRONG = strong_key
        measure(f"both: {second.name}", "100%", second_speed)

        saved = list(PaperStrongEmbedding.objects.all())
        for share in [float(x) for x in args.coverage.split(",") if x.strip()]:
            keep = set(random.Random(7).sample(ids, round(share * len(ids))))
            PaperStrongEmbedding.objects.exclude(paper_id__in=keep).delete()
            measure(f"both: {second.name}", f"{share:.0%}", second_speed)
            PaperStrongEmbedding.objects.all().delete()
            PaperStrongEmbedding.objects.bulk_create(saved)

    print()
    print(f"SciFact {args.split}, {len(qrels)} claims, SQLite; LEXICAL_WEIGHT as configured")
    print("| mode | tiers | 2nd-tier coverage | nDCG@10 | Recall@100 | query ms (p50) | papers/s |")
    print("|---|---|---|---|---|---|---|")
    for mode, tier, coverage, ndcg, recall, ms, speed, _ in rows:
        print(
            f"| {mode} | {tier} | {coverage} | {ndcg:.3f} | {recall:.3f} | {ms:.1f} | {speed:.0f} |"
        )


if __name__ == "__main__":
    main()

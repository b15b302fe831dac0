"""Which default `similarity_threshold` makes `find_related_papers` useful on a real library.

    nice -n 10 .venv/bin/python benchmarks/bench_related_threshold.py \\
        [--corpus ../shared/corpus/acl/acl_anthology_2024-08_all.jsonl.gz] [--sample 20000] \\
        [--papers 30] [--seed 42] [--directory DIR]

1. Draws `--sample` random papers (seeded) from the ACL corpus into a JSONL file and
   imports it with `manage.py import_jsonl` into a temporary knowledge base (or `--directory
   DIR`, reused when it already holds papers), then `manage.py reindex_embeddings`.
2. Picks `--papers` random papers and calls `papers_related` (what `find_related_papers`
   and REST call) with the threshold at 0 and max_results 100, so every candidate's
   similarity is seen once.
3. For each threshold prints: the share of the papers with at least 1 and at least 5
   related papers at or above it, the median number above it (of at most 100), and two
   precision proxies over the results above it: the share from the same proceedings
   volume (the venue's full name, e.g. one workshop's proceedings: a strong topical
   signal) and from the same venue series (its short name, e.g. 'wmt', 'acl'), beside the
   same two rates for random pairs of the sample as a baseline.

The ACL corpus has no user keywords, categories or citations, so similarity there is the
embedding component alone (papers/related.py) — what a library imported from a
bibliography file looks like until it is curated.
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus" / "acl" / "acl_anthology_2024-08_all.jsonl.gz"
THRESHOLDS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7)


def sample_corpus(corpus: Path, size: int, seed: int, target: Path) -> None:
    opener = gzip.open if corpus.suffix == ".gz" else open
    with opener(corpus, "rt", encoding="utf-8") as handle:
        lines = [line for line in handle if line.strip()]
    chosen = random.Random(seed).sample(lines, min(size, len(lines)))
    target.write_text("".join(chosen), encoding="utf-8")


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def prepare(args: argparse.Namespace, directory: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(
        DJANGO_SETTINGS_MODULE="research_site.settings",
        RESEARCH_DIRECTORY=str(directory),
        LOG_LEVEL="WARNING",
        EMBEDDING_MODEL_STRONG="",
    )
    manage(env, "migrate", "-v0")
    marker = directory / "bench-related-imported"
    if not marker.exists():
        sample = directory / "sample.jsonl"
        sample_corpus(Path(args.corpus), args.sample, args.seed, sample)
        print(manage(env, "import_jsonl", "--no-progress", str(sample)).strip(), file=sys.stderr)
        manage(env, "reindex_embeddings", "--no-progress")
        marker.touch()
    return env


def measure(args: argparse.Namespace) -> None:
    import django

    django.setup()
    from papers.models import Paper
    from papers.related import DEFAULT_THRESHOLD, papers_related

    rng = random.Random(args.seed)
    ids = list(Paper.objects.order_by("pk").values_list("pk", flat=True))
    venues = {
        pk: (name or "", short or "")
        for pk, name, short in Paper.objects.values_list("pk", "venue__name", "venue__short_name")
    }
    chosen = rng.sample(ids, args.papers)
    # Baseline: how often two random papers share a volume or a venue series.
    pairs = [(rng.choice(ids), rng.choice(ids)) for _ in range(20_000)]
    base_volume = sum(venues[a][0] == venues[b][0] for a, b in pairs) / len(pairs)
    base_series = sum(venues[a][1] == venues[b][1] for a, b in pairs) / len(pairs)

    found: list[list[tuple[float, bool, bool]]] = []
    for pk in chosen:
        paper = Paper.objects.get(pk=pk)
        result = papers_related(paper=paper, limit=100, similarity_threshold=0.0)
        found.append(
            [
                (
                    row["similarity"],
                    venues[row["paper_id"]][0] == venues[pk][0],
                    venues[row["paper_id"]][1] == venues[pk][1],
                )
                for row in result.results
            ]
        )
    print(
        f"{len(ids)} papers, {args.papers} random papers (seed {args.seed}); current default "
        f"{DEFAULT_THRESHOLD}. Baseline for random pairs: same volume {base_volume:.1%}, "
        f"same series {base_series:.1%}.\n"
    )
    print("| threshold | papers with ≥ 1 | with ≥ 5 | median count | same volume | same series |")
    print("|---:|---:|---:|---:|---:|---:|")
    for threshold in THRESHOLDS:
        counts = [sum(1 for s, _, _ in rows if s >= threshold) for rows in found]
        above = [(v, r) for rows in found for s, v, r in rows if s >= threshold]
        volume = sum(v for v, _ in above) / len(above) if above else 0.0
        series = sum(r for _, r in above) / len(above) if above else 0.0
        print(
            f"| {threshold:.2f} | {sum(c >= 1 for c in counts) / len(counts):.0%} "
            f"| {sum(c >= 5 for c in counts) / len(counts):.0%} "
            f"| {statistics.median(counts):g} "
            f"| {volume:.0%} | {series:.0%} |"
            if above
            else f"| {threshold:.2f} | 0% | 0% | 0 | – | – |"
        )
    top = [rows[0][0] for rows in found if rows]
    print(
        f"\nBest match per paper: median {statistics.median(top):.3f}, "
        f"min {min(top):.3f}, max {max(top):.3f}."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    parser.add_argument("--sample", type=int, default=20_000)
    parser.add_argument("--papers", type=int, default=30)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--directory", help="Knowledge base to create or reuse.")
    args = parser.parse_args()
    directory = Path(args.directory or tempfile.mkdtemp(prefix="bench-related-"))
    directory.mkdir(parents=True, exist_ok=True)
    env = prepare(args, directory)
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    measure(args)


if __name__ == "__main__":
    main()

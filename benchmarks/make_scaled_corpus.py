"""Scale the ACL Anthology corpus up to N papers (default 1,000,000) for search benchmarks.

    benchmarks/make_scaled_corpus.py --out ../scale-data/acl_scaled_1m.jsonl.gz \\
        [--source ../shared/corpus/acl/acl_anthology_2024-08_all.jsonl.gz] [--papers 1000000]
        [--seed 16]

Writes JSON Lines (gzipped) in the shape `manage.py import_jsonl` reads (the ACL shape:
id, title, authors, year, venue, venue_ids, year_source, collection, bibkey, abstract,
doi, url, pages, publisher) and a `<out>.stats.json` beside it. Same source, seed and
size give the same file, byte for byte.

How it scales
-------------
The output holds every original record, unchanged, plus synthetic papers: each original
is the template of 9 or 10 of them (95,336 originals -> 904,664 synthetic for 1M; which
originals get the 10th is drawn at random). The file keeps the source's order, one
collection (Anthology volume: "2020.acl", "W19" ...) at a time; within a collection the
originals and their synthetic papers are shuffled together. So the import order, the
`paper_id` order and the year mix along it look like the original dump's, 10 times denser.

A synthetic paper takes from its template the year, venue, venue_ids, collection,
year_source, pages, publisher, the number of authors and whether it has an abstract and a
DOI (so ~55% have abstracts and ~41% DOIs, as in the source), and gets:

- title: the template's title with words substituted (below). Its normalised form
  (`papers.identifiers.title_key`, what the importer matches titles on) is unique over the
  whole output, originals included: a title that comes out equal to one already written is
  drawn again with more substitution, then given a subtitle from another title of the same
  collection;
- abstract: as many sentences as the template's: each is, with equal odds, the template's
  own sentence or a random sentence from another abstract of the same collection (of the
  same year when the collection has fewer than 40 sentences); the sentences are shuffled
  and then have words substituted;
- authors: the same number as the template's; each is the template's author at that
  place with probability 0.5 (productive authors recur), else a new combination of a
  given name and a family name of two random authors of the corpus;
- identifiers: a new Anthology-style id `<template id>.x<n>` (n unique over the file),
  its aclanthology.org URL, a bibkey `family-year-word[-k]` unique over the file, and a DOI
  `10.5555/acl-scale.<n>` when the template has one. No DOI, arXiv id, Anthology id or
  normalised title repeats, so the importer's de-duplication (DOI, arXiv id, same-scheme
  identifiers, then normalised title + year + first author) merges no synthetic paper
  with another or with an original. The only merges are the source's own (5 repeated
  Anthology ids and ~430 cross-listings: 95,336 records -> 94,903 papers; the 1M file ->
  999,567 papers).

Word substitution keeps the term statistics (lower-cased words of letters, ranked by
corpus frequency over titles and abstracts):

- the 300 most frequent words (function words and the field's common terms: "language",
  "model", "translation", "neural", ...) are never substituted, so their document
  frequency stays close to the corpus's (language ~30% of papers, model ~25%) and a
  common-word query hits hundreds of thousands of the million, as it would in reality;
- any other word that occurs more than 3 times is replaced, with probability 0.3 (0.35
  in titles), by a word drawn uniformly from its frequency-rank neighbourhood (rank r -> a
  rank in [r - w, r + w], w = max(3, r / 10)). Neighbours have about the same frequency,
  so every word keeps its expected frequency and the Zipf curve keeps its shape;
- the rare tail (words seen at most 3 times) is where the vocabulary grows: the corpus
  follows Heaps' law V(n) = K n^b with b measured on the source itself (0.558 between
  shuffled halves), so 1M papers should have V0 (N / N0)^b distinct words (315,882 from
  the source's 85,040). A tail word of a synthetic paper becomes a brand-new word (the
  head of one tail word joined to the end of another, checked to be new) while the new
  words so far are fewer than that curve asks for at this point of the output; otherwise
  it is, with probability 0.3, one of the last 2,000 new words (new terms get reused, so
  they do not all stay hapaxes) or else stays as it is.

The 1M file (seed 16) came out with 545,482 abstracts (54.5%; source 54.6%), 412,990 DOIs
(41.3%; source 41.3%) and 315,868 distinct words (Heaps: 315,882). Document frequencies of
common words grow a little faster than the corpus (mixing sentences of different papers
spreads a topic's words over more abstracts): language 30.3% of papers -> 33.5%, model
24.7% -> 27.7%, translation 12.2% -> 15.1%, sentiment 3.2% -> 4.6%. The numbers are
written to `<out>.stats.json`.

Words with digits, case (Capitalised, ACRONYM) and the punctuation between words are
kept. What is not realistic: sentences come from different papers, so an abstract reads
like a collage of its venue's abstracts; substituted words ignore grammar; author
co-occurrence is looser than real collaboration networks. Full-text engines see terms,
frequencies and lengths, which are what this keeps.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import math
import os
import random
import re
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("BENCH_SHARED") or ROOT.parent / "shared")  # as run_all.py
DEFAULT_SOURCE = SHARED / "corpus" / "acl" / "acl_anthology_2024-08_all.jsonl.gz"

KEEP_TOP = 300  # most frequent words: never substituted
P_SUBSTITUTE = 0.30
P_SUBSTITUTE_TITLE = 0.35
TAIL_MAX_COUNT = 3  # words seen at most this often are the tail, where new words appear
P_REUSE_NEW = 0.3
RECENT_NEW = 2000
P_KEEP_AUTHOR = 0.5
P_OWN_SENTENCE = 0.5
MIN_POOL_SENTENCES = 40
DOI_PREFIX = "10.5555/acl-scale."
WATCHED = (  # document frequencies reported in the stats file
    "language", "model", "models", "based", "learning", "neural", "translation", "data",
    "task", "using", "speech", "parsing", "sentiment", "dialogue", "transformer", "bert",
)  # fmt: skip

WORD = re.compile(r"[^\W\d_]+")
SPLIT = re.compile(r"(\w+)")
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])")


def _fallback_title_key(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return " ".join(re.sub(r"[^a-z0-9]+", " ", folded.lower()).split())[:255]


def title_key_function() -> Any:
    """The importer's normalised title (papers.identifiers.title_key, what de-duplication
    matches titles on), or a close local stand-in when the project is not importable."""
    sys.path.insert(0, str(ROOT))
    try:
        from papers.identifiers import title_key
    except ImportError:  # pragma: no cover - the project is normally here
        return _fallback_title_key
    return title_key


def read_records(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def words_of(record: dict[str, Any]) -> list[str]:
    return [
        w.lower()
        for w in WORD.findall(f"{record.get('title') or ''} {record.get('abstract') or ''}")
    ]


def heaps_exponent(records: list[dict[str, Any]], seed: int) -> tuple[float, int]:
    """Heaps' b between half of the corpus and all of it (shuffled), and the vocabulary."""
    order = list(range(len(records)))
    random.Random(seed).shuffle(order)
    seen: set[str] = set()
    half = len(order) // 2
    at_half = 0
    for number, index in enumerate(order, start=1):
        seen.update(words_of(records[index]))
        if number == half:
            at_half = len(seen)
    return math.log(len(seen) / at_half) / math.log(len(order) / half), len(seen)


def match_case(model: str, word: str) -> str:
    if len(model) > 1 and model.isupper():
        return word.upper()
    if model[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


class Scaler:
    def __init__(self, records: list[dict[str, Any]], target: int, seed: int) -> None:
        self.records = records
        self.rng = random.Random(seed)
        self.title_key = title_key_function()
        counts: Counter[str] = Counter()
        for record in records:
            counts.update(words_of(record))
        self.counts = counts
        self.ranked = sorted(counts, key=lambda w: (-counts[w], w))
        self.rank = {w: i for i, w in enumerate(self.ranked)}
        self.tail = [w for w in self.ranked if counts[w] <= TAIL_MAX_COUNT and len(w) >= 4]
        self.vocabulary = set(self.ranked)
        self.beta, self.v0 = heaps_exponent(records, seed)
        self.n0 = len(records)
        self.target = target
        self.synthetic_total = max(0, target - self.n0)
        self.new_words: list[str] = []
        self.synthetic_done = 0
        self.serial = 0

        # Sentence pools per collection and per year; author names.
        self.pool: dict[str, list[str]] = {}
        self.year_pool: dict[Any, list[str]] = {}
        self.sentences: dict[int, list[str]] = {}
        for index, record in enumerate(records):
            abstract = record.get("abstract")
            if not abstract:
                continue
            parts = [s for s in SENTENCE.split(abstract) if s.strip()]
            self.sentences[index] = parts
            self.pool.setdefault(record.get("collection") or "", []).extend(parts)
            self.year_pool.setdefault(record.get("year"), []).extend(parts)
        names = sorted({a for r in records for a in (r.get("authors") or []) if a.strip()})
        self.given = [n.rsplit(" ", 1)[0] for n in names if " " in n]
        self.family = [n.rsplit(" ", 1)[1] for n in names if " " in n] or names
        self.titles_by_collection: dict[str, list[str]] = {}
        for record in records:
            self.titles_by_collection.setdefault(record.get("collection") or "", []).append(
                record["title"]
            )
        self.taken_titles = {self.title_key(r["title"]) for r in records}
        self.taken_bibkeys = {r.get("bibkey") for r in records if r.get("bibkey")}
        self.bibkey_next: dict[str, int] = {}
        self.ids_taken = {r.get("id") for r in records}

    # --- words ---------------------------------------------------------------------

    def _new_words_wanted(self) -> float:
        """New words the Heaps curve asks for after this many synthetic papers."""
        if not self.synthetic_total:
            return 0.0
        n = self.n0 + self.synthetic_done
        return self.v0 * ((n / self.n0) ** self.beta) - self.v0

    def _brand_new_word(self) -> str:
        rng = self.rng
        for _ in range(50):
            a, b = rng.choice(self.tail), rng.choice(self.tail)
            cut_a = rng.randint(3, max(3, len(a) - 1))
            cut_b = rng.randint(1, max(1, len(b) - 3))
            word = a[:cut_a] + b[cut_b:]
            if 5 <= len(word) <= 18 and word not in self.vocabulary:
                self.vocabulary.add(word)
                self.new_words.append(word)
                return word
        word = f"{rng.choice(self.tail)}{len(self.new_words)}x"  # practically never reached
        self.vocabulary.add(word)
        self.new_words.append(word)
        return word

    def _substitute(self, word: str, probability: float) -> str:
        lower = word.lower()
        rank = self.rank.get(lower)
        if rank is None or rank < KEEP_TOP:
            return word
        rng = self.rng
        if self.counts[lower] <= TAIL_MAX_COUNT:
            if len(self.new_words) < self._new_words_wanted():
                return match_case(word, self._brand_new_word())
            if self.new_words and rng.random() < P_REUSE_NEW:
                return match_case(word, rng.choice(self.new_words[-RECENT_NEW:]))
            return word
        if rng.random() >= probability:
            return word
        width = max(3, rank // 10)
        low, high = max(KEEP_TOP, rank - width), min(len(self.ranked) - 1, rank + width)
        return match_case(word, self.ranked[rng.randint(low, high)])

    def rewrite(self, text: str, probability: float) -> str:
        parts = SPLIT.split(text)
        for i in range(1, len(parts), 2):
            token = parts[i]
            if WORD.fullmatch(token):
                parts[i] = self._substitute(token, probability)
        return "".join(parts)

    # --- one synthetic paper ---------------------------------------------------------

    def _title(self, template: dict[str, Any]) -> str:
        base = template["title"]
        probability = P_SUBSTITUTE_TITLE
        for _ in range(6):
            title = self.rewrite(base, probability)
            key = self.title_key(title)
            if key and key not in self.taken_titles:
                self.taken_titles.add(key)
                return title
            probability = min(1.0, probability + 0.15)
        others = self.titles_by_collection.get(template.get("collection") or "") or [base]
        for attempt in itertools.count(1):
            other = self.rewrite(self.rng.choice(others), P_SUBSTITUTE_TITLE)
            title = f"{base}: {other}" if attempt < 20 else f"{base} ({attempt})"
            key = self.title_key(title)
            if key and key not in self.taken_titles:
                self.taken_titles.add(key)
                return title
        raise AssertionError("unreachable")

    def _abstract(self, index: int, template: dict[str, Any]) -> str | None:
        own = self.sentences.get(index)
        if not own:
            return None
        pool = self.pool.get(template.get("collection") or "") or []
        if len(pool) < MIN_POOL_SENTENCES:
            pool = self.year_pool.get(template.get("year")) or own
        rng = self.rng
        chosen = [s if rng.random() < P_OWN_SENTENCE else rng.choice(pool) for s in own]
        rng.shuffle(chosen)
        return self.rewrite(" ".join(chosen), P_SUBSTITUTE)

    def _authors(self, template: dict[str, Any]) -> list[str]:
        rng = self.rng
        authors = []
        for name in template.get("authors") or []:
            if rng.random() < P_KEEP_AUTHOR or not self.given:
                authors.append(name)
            else:
                authors.append(f"{rng.choice(self.given)} {rng.choice(self.family)}")
        return authors

    def _bibkey(self, authors: list[str], year: Any, title: str) -> str:
        family = authors[0].rsplit(" ", 1)[-1] if authors else "anonymous"
        family = _slug(family) or "anonymous"
        words = [w.lower() for w in WORD.findall(title) if self.rank.get(w.lower(), 0) >= 100]
        base = f"{family}-{year}-{_slug(words[0]) if words else 'paper'}"
        key, k = base, self.bibkey_next.get(base, 1)
        while key in self.taken_bibkeys:
            k += 1
            key = f"{base}-{k}"
        self.bibkey_next[base] = k
        self.taken_bibkeys.add(key)
        return key

    def synthetic(self, index: int) -> dict[str, Any]:
        template = self.records[index]
        self.serial += 1
        serial = self.serial
        paper_id = f"{template['id']}.x{serial}"
        if paper_id in self.ids_taken:  # pragma: no cover - the suffix makes this impossible
            raise AssertionError(paper_id)
        self.ids_taken.add(paper_id)
        title = self._title(template)
        authors = self._authors(template)
        record = {
            "id": paper_id,
            "title": title,
            "authors": authors,
            "year": template.get("year"),
            "venue": template.get("venue"),
            "venue_ids": template.get("venue_ids"),
            "year_source": template.get("year_source"),
            "collection": template.get("collection"),
            "bibkey": self._bibkey(authors, template.get("year"), title),
            "abstract": self._abstract(index, template),
            "doi": f"{DOI_PREFIX}{serial}" if template.get("doi") else None,
            "url": f"https://aclanthology.org/{paper_id}",
            "pages": template.get("pages"),
            "publisher": template.get("publisher"),
        }
        self.synthetic_done += 1
        return record

    # --- the whole file --------------------------------------------------------------

    def copies(self) -> list[int]:
        """How many synthetic papers each original is the template of."""
        n = self.n0
        each, extra = divmod(self.synthetic_total, n)
        counts = [each] * n
        for index in self.rng.sample(range(n), extra):
            counts[index] += 1
        return counts

    def output(self) -> Iterator[dict[str, Any]]:
        counts = self.copies()
        blocks = itertools.groupby(range(self.n0), key=lambda i: self.records[i].get("collection"))
        for _, members in blocks:
            indexes = list(members)
            block: list[dict[str, Any]] = [self.records[i] for i in indexes]
            for i in indexes:
                block.extend(self.synthetic(i) for _ in range(counts[i]))
            self.rng.shuffle(block)
            yield from block


def _slug(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9]+", "", folded)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--out", type=Path, required=True, help="Output .jsonl.gz")
    parser.add_argument("--papers", type=int, default=1_000_000, help="Records in all.")
    parser.add_argument("--seed", type=int, default=16)
    args = parser.parse_args()

    started = time.perf_counter()
    records = read_records(args.source)
    if args.papers < len(records):
        parser.error(f"--papers must be at least the source's {len(records)} records")
    scaler = Scaler(records, args.papers, args.seed)
    print(
        f"source: {len(records):,} records, vocabulary {scaler.v0:,} words, Heaps b "
        f"{scaler.beta:.3f}; writing {args.papers:,} ({time.perf_counter() - started:.0f} s)",
        file=sys.stderr,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    written = with_abstract = with_doi = 0
    document_frequency: Counter[str] = Counter()
    watched = set(WATCHED)
    partial = args.out.with_name(args.out.name + ".partial")
    # No name and mtime 0 in the gzip header: the same bytes on every run.
    with (
        open(partial, "wb") as raw,
        gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=6, mtime=0) as gz,
    ):
        for record in scaler.output():
            gz.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
            written += 1
            with_abstract += bool(record.get("abstract"))
            with_doi += bool(record.get("doi"))
            document_frequency.update(watched.intersection(words_of(record)))
            if written % 100_000 == 0:
                print(f"  {written:,} ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    partial.replace(args.out)
    source_frequency: Counter[str] = Counter()
    for record in records:
        source_frequency.update(watched.intersection(words_of(record)))
    expected_vocabulary = scaler.v0 * (written / scaler.n0) ** scaler.beta
    stats = {
        "source": str(args.source),
        "seed": args.seed,
        "records": written,
        "originals": scaler.n0,
        "synthetic": scaler.synthetic_done,
        "with_abstract": with_abstract,
        "with_doi": with_doi,
        "heaps_b": round(scaler.beta, 4),
        "vocabulary_source": scaler.v0,
        "vocabulary_out": scaler.v0 + len(scaler.new_words),
        "vocabulary_heaps_expected": round(expected_vocabulary),
        "document_frequency_source": {w: source_frequency[w] for w in WATCHED},
        "document_frequency_out": {w: document_frequency[w] for w in WATCHED},
        "seconds": round(time.perf_counter() - started, 1),
    }
    args.out.with_name(args.out.name + ".stats.json").write_text(json.dumps(stats, indent=2))
    print(json.dumps(stats, indent=2), file=sys.stderr)


if __name__ == "__main__":
    main()

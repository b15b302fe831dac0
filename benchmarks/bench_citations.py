#!/usr/bin/env python
"""check_citations over /mcp on drafts built from the real fixture PDFs and ACL records:
precision and recall of each flag it raises.

    benchmarks/bench_citations.py [--drafts 40] [--seed 22] [--calibrate]

The library: the eight real PDFs of ../shared/fixtures/pdfs (attached, passages indexed),
ACL Anthology records (tests/fixtures/acl, no PDF), and three papers known by DOI whose
Crossref records a local server replays (../shared/fixtures/crossref): the PLOS ONE article
with its real `updated-by` correction, and a record given a synthesised `updated-by`
retraction (Crossref's documented shape; no recorded retraction is at hand).

Drafts are generated with a fixed seed, each citation with the answer it should get:
- a sentence of a PDF quoted with the right citation (supported) or a wrong one
  (unsupported), and the same sentence reworded by code (words dropped, synonyms, clauses
  swapped; no language model) with the right citation (supported) or a wrong one
  (unsupported); the sentence quoted with one word changed (uncertain: a misquote) and
  negated ("It is not true that ...": unsupported, a known blind spot);
- invented sentences citing a real paper (unsupported);
- reference entries for papers that do not exist (invented titles, some with DOIs no
  source knows): not_found, which the local Crossref answers with a 404 or unrelated works;
- ACL records cited through their reference entry (exists, no_pdf), some with a wrong year
  in the entry (metadata mismatch);
- the corrected and the retracted paper (flags).
Styles rotate between numeric with an IEEE list, author-year with an APA list, LaTeX
citekeys and pandoc keys. `--calibrate` prints the similarity of each support case, which
set the thresholds in engines/citecheck/support.py.

Then the mismatch drafts (`--mismatch-drafts`, 0 to skip), on real ACL records with
abstracts and no PDF (../shared/corpus/acl's 10k sample: every paper of first authors
who have two papers within two years, and other papers for swapped titles), added to the
same library after the drafts above. Author-year drafts with an APA list; each citation
cites a reworded sentence of one paper P's abstract, as:
- `right`: "(F et al., P's year)" (expected: no flag; several papers of F that year are for
  the sentence to settle);
- `year_other`: the year of F's other paper S (expected: wrong_paper, metadata_mismatch);
- `year_none`: a year within two of P's in which F has no paper (metadata_mismatch);
- `title_swap` / `title_sibling`: an entry with P's authors and year and the title of a
  paper of another author / of S (wrong_paper, metadata_mismatch);
- `entry_right`: P's own entry (no flag); `entry_year`: P's entry with a shifted year
  (metadata_mismatch).
Scored per flag (`wrong_paper` among `flags`; `metadata_mismatch`: `metadata` lists fields),
and how often the citation ends on P ("paper meant").

One file because a benchmark is one command with one report: its cases, the calls it
measures and the figures it prints are read together, and no other module imports them.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import sys
import tempfile
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from mcp_server import McpServer, answer

ROOT = Path(__file__).resolve().parent.parent
# The shared data beside the checkout (a git worktree elsewhere names it in BENCH_SHARED).
SHARED_ROOT = Path(os.environ.get("BENCH_SHARED") or ROOT.parent / "shared")
SHARED = SHARED_ROOT / "fixtures"
PDFS = SHARED / "pdfs"
CROSSREF = SHARED / "crossref"
ACL = ROOT / "tests" / "fixtures" / "acl" / "acl_sample300.jsonl"
ACL_ABSTRACTS = SHARED_ROOT / "corpus" / "acl" / "acl_anthology_sample10k_with_abstracts.jsonl"
MISMATCH_EXPECTED = {  # case -> (wrong_paper, metadata_mismatch)
    "right": (False, False),
    "year_other": (True, True),
    "year_none": (False, True),
    "title_swap": (True, True),
    "title_sibling": (True, True),
    "entry_right": (False, False),
    "entry_year": (False, True),
}
MAX_FAMILY_PAPERS = 12  # first authors with more papers in the sample are left out
MISMATCH_FAMILIES = 80  # first authors drawn (their papers and as many others are added)
GOALS = {"not_found": 0.95, "unsupported": 0.95}
VERDICTS = ("supported", "unsupported", "uncertain")

# The fixture PDFs and what their first pages say of them.
PDF_PAPERS = {
    "1111.2011v2.pdf": ("Quantum Criticality for Extended Nodes on a Bethe Lattice in the "
                        "Large Connectivity Limit",
                        ["James M. Murray", "Adrian Del Maestro", "Zlatko Tesanovic"], 2011),
    "2304.02623v1.pdf": ("Beyond Summarization: Designing AI Support for Real-World "
                         "Expository Writing Tasks", ["Zejiang Shen", "Tal August"], 2023),
    "papermage.pdf": ("PaperMage: A Unified Toolkit for Processing, Representing, and "
                      "Manipulating Visually-Rich Scientific Documents",
                      ["Kyle Lo", "Zejiang Shen"], 2023),
    "2020.acl-main.447.pdf": ("S2ORC: The Semantic Scholar Open Research Corpus",
                              ["Kyle Lo", "Lucy Lu Wang", "Mark Neumann"], 2020),
    "2203.00130v1.pdf": ("Paper Plain: Making Medical Research Papers Approachable to "
                         "Healthcare Consumers with Natural Language Processing",
                         ["Tal August", "Lucy Lu Wang", "Jonathan Bragg"], 2022),
    "2020.acl-main.207.pdf": ("SPECTER: Document-level Representation Learning using "
                              "Citation-informed Transformers",
                              ["Arman Cohan", "Sergey Feldman", "Iz Beltagy"], 2020),
    "N18-3011.pdf": ("Construction of the Literature Graph in Semantic Scholar",
                     ["Waleed Ammar", "Dirk Groeneveld", "Chandra Bhagavatula"], 2018),
}  # fmt: skip
CORRECTED_DOI = "10.1371/journal.pone.0033693"
RETRACTED_DOI = "10.1016/j.neurobiolaging.2010.03.024"
PLAIN_DOI = "10.1038/srep16696"
SYNONYMS = {
    "show": "demonstrate", "shows": "demonstrates", "use": "employ", "uses": "employs",
    "large": "big", "small": "little", "method": "approach", "methods": "approaches",
    "important": "significant", "help": "assist", "helps": "assists", "data": "data",
    "paper": "work", "papers": "works", "however": "yet", "many": "numerous",
    "provide": "offer", "provides": "offers", "improve": "enhance", "results": "findings",
}  # fmt: skip
STOP = {"the", "a", "an", "of", "that", "which", "to", "in", "is", "are", "and", "this"}
INVENTED_WORDS = (
    "glacier", "honeybee", "sourdough", "volcanic", "orchestra", "maritime", "saffron",
    "tectonic", "falconry", "porcelain", "monsoon", "lichen", "cathedral", "tundra",
)  # fmt: skip


@dataclass
class Expected:
    status: str  # exists | not_found
    support: str | None = None  # supported | unsupported | no_pdf
    flag: str | None = None  # retracted | corrected
    mismatch: bool = False
    case: str = ""


@dataclass
class Item:
    """One cited work in a draft: its marker text, reference entry and claim sentence."""

    sentence: str
    ref: dict[str, Any]
    expected: Expected


@dataclass
class Paper:
    key: str
    title: str
    authors: list[str]
    year: int
    doi: str = ""
    pdf: str = ""
    paper_id: int = 0
    citekey: str = ""
    sentences: list[str] = field(default_factory=list)


# --- the local Crossref -----------------------------------------------------------------


def crossref_answers() -> dict[str, tuple[int, Any]]:
    answers = {}
    for path in CROSSREF.glob("works_10.*.json"):
        recorded = json.loads(path.read_text())
        body = recorded["body"]
        if isinstance(body, dict) and body.get("message", {}).get("DOI"):
            answers[body["message"]["DOI"].lower()] = (recorded["status_code"], body)
    retracted = answers[RETRACTED_DOI][1]
    retracted["message"]["updated-by"] = [
        {"DOI": "10.1016/j.neurobiolaging.2099.01.001", "type": "retraction",
         "source": "retraction-watch", "updated": {"date-parts": [[2024, 1, 5]]}}
    ]  # fmt: skip
    search = json.loads((CROSSREF / "works_query_ecology_rows_2.json").read_text())["body"]
    answers["?search"] = (200, search)
    return answers


def start_crossref() -> tuple[ThreadingHTTPServer, str]:
    answers = crossref_answers()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = unquote(urlsplit(self.path).path)
            if path.rstrip("/") == "/works":
                status, body = answers["?search"]
            else:
                status, body = answers.get(path.removeprefix("/works/").lower(), (404, None))
            payload = json.dumps(body).encode() if body else b"Resource not found."
            self.send_response(status)
            kind = "application/json" if body else "text/plain"
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


# --- the library --------------------------------------------------------------------------


def server_env(directory: str, crossref_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "MCP_AUTH_TOKEN")}
    env.update(
        DJANGO_SETTINGS_MODULE="research_site.settings",
        RESEARCH_DIRECTORY=directory,
        LOG_LEVEL="WARNING",
        MCP_REQUIRE_COLLECTION="false",
        ENGINES_ENABLED="crossref",
        CROSSREF_API_URL=crossref_url,
    )
    for name in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
        env.pop(name, None)  # tasks and engine calls in this process and the server's
    return env


def page_sentences(path: Path) -> list[str]:
    """Sentences of 12-40 words of running text from the PDF's pages before its reference
    list (as PyMuPDF reads them; the passage index reads the same text)."""
    import pymupdf

    found = []
    with pymupdf.open(path) as document:
        for page in document:
            raw = page.get_text()
            heading = re.search(
                r"^\s*(?:\d+\s+)?(?:References|REFERENCES|Bibliography)\s*$", raw, re.M
            )
            text = " ".join((raw[: heading.start()] if heading else raw).split())
            text = re.sub(r"(\w)- (\w)", r"\1\2", text)
            for sentence in re.split(r"(?<=[a-z]{2}[.!?])\s+(?=[A-Z])", text):
                words = sentence.split()
                letters = sum(c.isalpha() for c in sentence)
                capitals = sum(1 for w in words if w[:1].isupper())
                if (
                    12 <= len(words) <= 40
                    and sentence.isprintable()
                    and letters > 0.8 * len(sentence.replace(" ", ""))
                    and capitals < 0.3 * len(words)
                    and not re.search(r"et al|\[\d|\d{4}|@|http|[\u2020\u2217\u2021§]", sentence)
                ):
                    found.append(sentence.strip())
            if heading:
                break
    return found


def build_library(
    directory: str, rng: random.Random
) -> tuple[list[Paper], list[Paper], dict[str, Paper]]:
    from django.core.management import call_command

    from papers.models import Paper as PaperRow
    from papers.pdf import services as pdf_services
    from papers.schemas import PaperRecord
    from papers.services import paper_upsert

    with_pdf: list[Paper] = []
    for name, (title, authors, year) in PDF_PAPERS.items():
        paper = Paper(name, title, authors, year, pdf=name)
        row, _ = paper_upsert(record=PaperRecord.build(title=title, authors=authors, year=year))
        pdf_services.pdf_attach_file(paper_id=row.pk, path=PDFS / name)
        paper.paper_id, paper.citekey = row.pk, row.citekey
        paper.sentences = page_sentences(PDFS / name)
        with_pdf.append(paper)
    # Attaching indexed them already; this is what a user runs to be sure (its report
    # goes nowhere: stdout is the benchmark's table).
    call_command("reindex_passages", all=True, no_progress=True, stdout=io.StringIO())

    acl: list[Paper] = []
    for line in ACL.read_text().splitlines():
        record = json.loads(line)
        if not record.get("year") or not record.get("authors") or len(record["title"]) < 25:
            continue
        title, authors, year = record["title"], record["authors"], int(record["year"])
        built = PaperRecord.build(
            title=title, authors=authors, year=year, venue=record.get("venue") or ""
        )
        row, _ = paper_upsert(record=built)
        acl.append(Paper(record["id"], title, authors, year, paper_id=row.pk, citekey=row.citekey))
    # Keep author+year unique among the cited ACL papers, so author-year markers are unambiguous.
    seen: set[tuple[str, int]] = set()
    unique = []
    for paper in acl:
        family = paper.authors[0].split()[-1].lower()
        if (family, paper.year) not in seen and PaperRow.objects.filter(
            year=paper.year, author_links__position=0,
            author_links__author__family_name__iexact=paper.authors[0].split()[-1],
        ).count() == 1:  # fmt: skip
            seen.add((family, paper.year))
            unique.append(paper)

    by_doi: dict[str, Paper] = {}
    for doi in (CORRECTED_DOI, RETRACTED_DOI, PLAIN_DOI):
        body = crossref_answers()[doi][1]["message"]
        authors = [f"{a.get('given', '')} {a.get('family', '')}".strip() for a in body["author"]]
        year = body["issued"]["date-parts"][0][0]
        row, _ = paper_upsert(record=PaperRecord.build(title=body["title"][0], authors=authors,
                                                       year=year, doi=doi))  # fmt: skip
        by_doi[doi] = Paper(doi, body["title"][0], authors, year, doi=doi, paper_id=row.pk,
                            citekey=row.citekey)  # fmt: skip
    rng.shuffle(unique)
    return with_pdf, unique, by_doi


# --- drafts -------------------------------------------------------------------------------


def reword(sentence: str, rng: random.Random) -> str:
    words = sentence.rstrip(".").split()
    kept = [w for w in words if not (w.lower() in STOP and rng.random() < 0.5)]
    kept = [SYNONYMS.get(w.lower(), w) if rng.random() < 0.7 else w for w in kept]
    text = " ".join(kept)
    if ", " in text and rng.random() < 0.5:
        head, _, tail = text.partition(", ")
        text = f"{tail}, {head[0].lower()}{head[1:]}"
    return f"As reported, {text[0].lower()}{text[1:]}."


def invented_sentence(rng: random.Random) -> str:
    a, b, c = rng.sample(INVENTED_WORDS, 3)
    return (f"The {a} {b} model reduces {c} erosion by {rng.randint(11, 89)} percent in "
            f"coastal {rng.choice(INVENTED_WORDS)} surveys.")  # fmt: skip


def fake_paper(rng: random.Random, index: int, with_doi: bool) -> Paper:
    a, b, c = rng.sample(INVENTED_WORDS, 3)
    family = rng.choice(["Quillfeather", "Marchbanks", "Oxenford", "Thistlewood", "Brackwater"])
    paper = Paper(f"fake{index}", f"On the {a} dynamics of {b} {c} networks",
                  [f"Imogen {family}", "Rufus Penhallow"], rng.randint(2005, 2023))  # fmt: skip
    if with_doi:
        paper.doi = f"10.5555/invented.{index}.{rng.randint(1000, 9999)}"
    return paper


def items_for_draft(
    rng: random.Random, pdfs: list[Paper], acl: list[Paper], by_doi: dict[str, Paper], n: int
) -> list[Item]:
    """`n` cited works; one paper per first author and year, as writers keep them apart
    (2020a, 2020b): an author-year marker that two entries fit is reported ambiguous."""
    items: list[Item] = []
    taken: dict[tuple[str, int], str] = {}
    while len(items) < n:
        item = one_item(rng, pdfs, acl, by_doi)
        paper: Paper = item.ref["paper"]
        key = (family(paper.authors[0]), item.ref["entry_year"])
        if taken.setdefault(key, paper.key) == paper.key:
            items.append(item)
    return items


def one_item(
    rng: random.Random, pdfs: list[Paper], acl: list[Paper], by_doi: dict[str, Paper]
) -> Item:
    case = rng.choice(["quote", "quote_wrong", "reworded", "reworded_wrong", "invented",
                       "fake", "fake", "acl", "acl_wrong_year", "flagged", "misquote",
                       "negated"])  # fmt: skip
    source = rng.choice([p for p in pdfs if p.sentences])
    other = rng.choice([p for p in pdfs if p is not source])
    sentence = rng.choice(source.sentences)
    if case in ("quote", "quote_wrong"):
        cited = source if case == "quote" else other
        claim = f'They write that "{sentence.rstrip(".")}".'
        verdict = "supported" if case == "quote" else "unsupported"
        return Item(claim, ref_of(cited), Expected("exists", verdict, case=case))
    if case == "misquote":  # one word changed: for the writer to look at
        words = sentence.rstrip(".").split()
        at = rng.randrange(len(words))
        words[at] = rng.choice(INVENTED_WORDS)
        claim = f'They write that "{" ".join(words)}".'
        return Item(claim, ref_of(source), Expected("exists", "uncertain", case=case))
    if case == "negated":  # the paper's words, the opposite meaning: a known blind spot
        claim = f"It is not true that {sentence[0].lower()}{sentence[1:]}"
        return Item(claim, ref_of(source), Expected("exists", "unsupported", case=case))
    if case in ("reworded", "reworded_wrong"):
        cited = source if case == "reworded" else other
        verdict = "supported" if case == "reworded" else "unsupported"
        return Item(reword(sentence, rng), ref_of(cited), Expected("exists", verdict, case=case))
    if case == "invented":
        expected = Expected("exists", "unsupported", case=case)
        return Item(invented_sentence(rng), ref_of(source), expected)
    if case == "fake":
        fake = fake_paper(rng, rng.randint(1, 10**6), with_doi=rng.random() < 0.5)
        return Item(invented_sentence(rng), ref_of(fake), Expected("not_found", case=case))
    if case in ("acl", "acl_wrong_year"):
        paper = acl.pop()
        ref = ref_of(paper)
        mismatch = case == "acl_wrong_year"
        if mismatch:
            ref["entry_year"] = paper.year + rng.choice([-3, -2, 2, 3])
        expected = Expected("exists", "no_pdf", mismatch=mismatch, case=case)
        return Item(f"This was studied in {paper.title.lower()}.", ref, expected)
    doi = rng.choice([CORRECTED_DOI, RETRACTED_DOI, PLAIN_DOI])
    flag = {CORRECTED_DOI: "corrected", RETRACTED_DOI: "retracted"}.get(doi)
    expected = Expected("exists", "no_pdf", flag=flag, case=f"doi:{flag}")
    return Item("Dopamine neurons were studied.", ref_of(by_doi[doi]), expected)


def ref_of(paper: Paper) -> dict[str, Any]:
    return {"paper": paper, "entry_year": paper.year}


def family(name: str) -> str:
    return name.split()[-1]


def render(items: list[Item], style: str) -> str:
    """The draft text: one sentence per cited work, its marker in the draft's style, and
    the reference list that style needs."""
    lines: list[str] = []
    entries: list[str] = []
    labels: dict[str, int] = {}
    for item in items:
        paper: Paper = item.ref["paper"]
        year = item.ref["entry_year"]
        label = labels.setdefault(f"{paper.key}|{year}", len(labels) + 1)
        body = item.sentence.rstrip(".")
        who = family(paper.authors[0])
        if len(paper.authors) > 2:
            who += " et al."
        elif len(paper.authors) == 2:
            who += f" and {family(paper.authors[1])}"
        # A key names the paper itself: entries that must be read (a wrong year, papers
        # the library cannot know by key) are cited by number in LaTeX and pandoc drafts.
        by_key = paper.citekey and not item.expected.mismatch
        if style == "author_year":
            lines.append(f"{body} ({who}, {year}).")
        elif style == "latex" and by_key:
            lines.append(rf"{body} \cite{{{paper.citekey}}}.")
        elif style == "pandoc" and by_key:
            lines.append(f"{body} [@{paper.citekey}].")
        else:
            lines.append(f"{body} [{label}].")
        if len(entries) < len(labels):
            authors = ", ".join(paper.authors[:-1])
            authors = f"{authors} and {paper.authors[-1]}" if authors else paper.authors[-1]
            doi = f" https://doi.org/{paper.doi}" if paper.doi else ""
            if style == "author_year":
                entries.append(f"{authors} ({year}). {paper.title}. Proceedings.{doi}")
            else:
                entries.append(
                    f"[{label}] {authors}, \u201c{paper.title},\u201d in Proceedings, {year}.{doi}"
                )
    separator = "\n\n" if style == "author_year" else "\n"
    return " ".join(lines) + "\n\nReferences\n\n" + separator.join(entries) + "\n"


# --- mismatch drafts ------------------------------------------------------------------------


@dataclass
class Mismatch:
    case: str
    paper: Paper  # the paper the sentence is from
    sentence: str
    marker_year: int
    entry: Paper | None = None  # the reference entry written (authors, year, title)


def family_key(name: str) -> str:
    return name.split()[-1].lower()


def abstract_sentences(abstract: str) -> list[str]:
    sentences = re.split(r"(?<=[a-z]{2}[.!?])\s+(?=[A-Z])", " ".join(abstract.split()))
    return [s for s in sentences if 10 <= len(s.split()) <= 45 and not re.search(r"[(\[]|et al", s)]


def mismatch_library(rng: random.Random) -> tuple[dict[str, list[Paper]], list[Paper]]:
    """Adds the papers of first authors with two papers within two years (and as many
    other papers, for swapped titles) to the library: family -> papers, others."""
    from papers.schemas import PaperRecord
    from papers.services import paper_upsert

    by_family: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in ACL_ABSTRACTS.read_text().splitlines():
        record = json.loads(line)
        authors = record.get("authors") or []
        # A first author whose family name reads as one ("T.y.s.s" does not).
        named = bool(authors) and re.fullmatch(r"[A-ZÀ-Þ][\w'’-]*\w", family(authors[0]))
        if named and record.get("year") and len(record["title"]) >= 25:
            by_family[family_key(record["authors"][0])].append(record)
    chosen = sorted(
        family
        for family, records in by_family.items()
        if len(records) <= MAX_FAMILY_PAPERS
        and any(0 < abs(a["year"] - b["year"]) <= 2 for a in records for b in records)
    )
    chosen = rng.sample(chosen, min(MISMATCH_FAMILIES, len(chosen)))
    others = sorted(family for family, records in by_family.items() if len(records) == 1)
    others = rng.sample(others, len(chosen))

    def add(record: dict[str, Any]) -> Paper:
        title, authors, year = record["title"], record["authors"], int(record["year"])
        built = PaperRecord.build(
            title=title,
            authors=authors,
            year=year,
            venue=record.get("venue") or "",
            abstract=record["abstract"],
        )
        row, _ = paper_upsert(record=built)
        paper = Paper(record["id"], title, authors, year, paper_id=row.pk, citekey=row.citekey)
        paper.sentences = abstract_sentences(record["abstract"])
        return paper

    families = {family: [add(r) for r in by_family[family]] for family in chosen}
    return families, [add(by_family[family][0]) for family in others]


def mismatch_items(
    rng: random.Random, families: dict[str, list[Paper]], others: list[Paper], n: int
) -> list[Mismatch]:
    """`n` citations, one first author each."""
    items: list[Mismatch] = []
    for family in rng.sample(sorted(families), len(families)):
        papers = families[family]
        usable = [p for p in papers if p.sentences]
        if not usable:
            continue
        paper = rng.choice(usable)
        years = {p.year for p in papers}
        siblings = [p for p in papers if p is not paper and p.title != paper.title]
        near = [p for p in siblings if 0 < abs(p.year - paper.year) <= 2]
        free = [y for y in range(paper.year - 2, paper.year + 3) if y not in years]
        cases = ["right", "entry_right", "entry_year", "title_swap"]
        cases += ["year_other"] if near else []
        cases += ["year_none"] if free else []
        cases += ["title_sibling"] if siblings else []
        case = rng.choice(cases)
        sentence = reword(rng.choice(paper.sentences), rng)
        item = Mismatch(case, paper, sentence, paper.year)
        if case == "year_other":
            item.marker_year = rng.choice(near).year
        elif case == "year_none":
            item.marker_year = rng.choice(free)
        elif case == "entry_right":
            item.entry = paper
        elif case == "entry_year":
            item.marker_year = paper.year + rng.choice([-2, -1, 1, 2])
            item.entry = Paper(paper.key, paper.title, paper.authors, item.marker_year)
        elif case in ("title_swap", "title_sibling"):
            source = rng.choice(others if case == "title_swap" else siblings)
            item.entry = Paper(paper.key, source.title, paper.authors, paper.year)
        items.append(item)
        if len(items) == n:
            break
    return items


def mismatch_render(items: list[Mismatch]) -> str:
    lines, entries = [], []
    for item in items:
        authors = item.paper.authors
        who = family(authors[0]) + (
            " et al."
            if len(authors) > 2
            else f" and {family(authors[1])}"
            if len(authors) == 2
            else ""
        )
        lines.append(f"{item.sentence.rstrip('.')} ({who}, {item.marker_year}).")
        if item.entry is not None:
            names = ", ".join(authors[:-1])
            names = f"{names} and {authors[-1]}" if names else authors[-1]
            entries.append(f"{names} ({item.entry.year}). {item.entry.title}. Proceedings.")
    text = " ".join(lines)
    return text + ("\n\nReferences\n\n" + "\n\n".join(entries) + "\n" if entries else "")


def mismatch_score(results: list[tuple[Mismatch, dict[str, Any]]]) -> list[str]:
    """The table's lines: per flag, then how often the citation ends on the paper meant."""
    lines = ["| flag | expected | raised | precision | recall |", "|---|---:|---:|---:|---:|"]
    for index, flag in enumerate(("wrong_paper", "metadata_mismatch")):
        tp = predicted = wanted = 0
        for item, got in results:
            expected = MISMATCH_EXPECTED[item.case][index]
            if flag == "wrong_paper":
                raised = any(f["flag"] == flag for f in got.get("flags", []))
            else:
                raised = isinstance(got.get("metadata"), list)
            tp += raised and expected
            predicted += raised
            wanted += expected
        lines.append(f"| {flag} | {wanted} | {predicted} | {ratio(tp, predicted)} "
                     f"| {ratio(tp, wanted)} |")  # fmt: skip
    meant = sum(1 for item, got in results if got.get("paper", {}).get("paper_id") is not None
                and got["paper"]["paper_id"] == item.paper.paper_id)  # fmt: skip
    lines.append(f"| paper meant | {len(results)} | {meant} | | {ratio(meant, len(results))} |")
    return lines


# --- scoring ------------------------------------------------------------------------------


def score(results: list[tuple[Expected, dict[str, Any]]]) -> dict[str, tuple[int, int, int]]:
    """flag -> (true positives, predicted, expected)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])

    def tally(flag: str, predicted: bool, expected: bool) -> None:
        counts[flag][0] += predicted and expected
        counts[flag][1] += predicted
        counts[flag][2] += expected

    for expected, got in results:
        for status in ("exists", "not_found"):
            tally(status, got.get("status") == status, expected.status == status)
        if expected.support in VERDICTS:
            for verdict in VERDICTS:
                tally(verdict, got.get("support") == verdict, expected.support == verdict)
        elif got.get("support") in VERDICTS:
            counts[got["support"]][1] += 1  # a verdict where none could be given
        if expected.support == "no_pdf" or got.get("support") == "no_pdf":
            tally("no_pdf", got.get("support") == "no_pdf", expected.support == "no_pdf")
        flags = {flag["flag"] for flag in got.get("flags", [])}
        for flag in ("retracted", "corrected"):
            tally(flag, flag in flags, expected.flag == flag)
        tally("metadata mismatch", isinstance(got.get("metadata"), list), expected.mismatch)
    return {flag: (tp, predicted, wanted) for flag, (tp, predicted, wanted) in counts.items()}


def ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drafts", type=int, default=40)
    parser.add_argument("--per-draft", type=int, default=8)
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--mismatch-drafts", type=int, default=30)
    parser.add_argument("--calibrate", action="store_true")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    crossref, crossref_url = start_crossref()
    work = ROOT / "benchmarks" / ".work"
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work, prefix="bench-citations-") as directory:
        env = server_env(directory, crossref_url)
        os.environ.update(env)
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        pdfs, acl, by_doi = build_library(directory, rng)
        results: list[tuple[Expected, dict[str, Any]]] = []
        similarities: dict[str, list[float]] = defaultdict(list)
        styles = ("numeric", "author_year", "latex", "pandoc")
        timings = []
        with McpServer(env) as server:
            for index in range(args.drafts):
                items = items_for_draft(rng, pdfs, acl, by_doi, args.per_draft)
                text = render(items, styles[index % len(styles)])
                elapsed, result = server.call_tool(
                    "check_citations", {"text": text, "engines": "crossref"}
                )
                timings.append(elapsed)
                citations = answer(result)["citations"]
                if len(citations) != len(items):
                    raise SystemExit(f"draft {index}: {len(citations)} citations found for "
                                     f"{len(items)} written:\n{text}")  # fmt: skip
                for item, got in zip(items, citations, strict=True):
                    results.append((item.expected, got))
                    if "similarity" in got:
                        similarities[item.expected.case].append(got["similarity"])
                    wrong_verdict = got.get("support") != item.expected.support
                    if args.calibrate and wrong_verdict and "support" in got:
                        print(f"{item.expected.case}: {got['support']} ({got.get('similarity')})"
                              f" {item.sentence[:90]}", file=sys.stderr)  # fmt: skip
                    mismatch = isinstance(got.get("metadata"), list)
                    if args.calibrate and mismatch != item.expected.mismatch:
                        shown = f"{got['marker']} -> {got.get('paper')}"
                        print(f"metadata {got.get('metadata')}: {shown}", file=sys.stderr)
            mismatches: list[tuple[Mismatch, dict[str, Any]]] = []
            mismatch_timings: list[float] = []
            if args.mismatch_drafts:
                families, others = mismatch_library(rng)
                server.connection.close()  # idle while adding: reconnect on the next call
                for _ in range(args.mismatch_drafts):
                    written = mismatch_items(rng, families, others, args.per_draft)
                    elapsed, result = server.call_tool(
                        "check_citations", {"text": mismatch_render(written), "engines": "local"}
                    )
                    mismatch_timings.append(elapsed)
                    citations = answer(result)["citations"]
                    if len(citations) != len(written):
                        raise SystemExit(f"{len(citations)} citations for {len(written)}: "
                                         f"{mismatch_render(written)}")  # fmt: skip
                    mismatches += list(zip(written, citations, strict=True))
                    if args.calibrate:
                        for item, got in zip(written, citations, strict=True):
                            flags = [f["flag"] for f in got.get("flags", [])]
                            meant = got.get("paper", {}).get("paper_id") == item.paper.paper_id
                            print(f"{item.case}: {got['status']} {got.get('metadata')} {flags} "
                                  f"fit={got.get('fit')} {got.get('picked')} meant={meant}"
                                  f" | {item.sentence[:70]}", file=sys.stderr)  # fmt: skip
        crossref.shutdown()
    table = score(results)
    print(f"### check_citations over /mcp: {len(results)} citations in {args.drafts} drafts "
          f"(seed {args.seed}; engines: the library and a local Crossref)\n")  # fmt: skip
    print("| flag | expected | raised | precision | recall | goal |")
    print("|---|---:|---:|---:|---:|---|")
    for flag in ("exists", "not_found", *VERDICTS, "no_pdf", "retracted", "corrected",
                 "metadata mismatch"):  # fmt: skip
        tp, predicted, wanted = table.get(flag, (0, 0, 0))
        goal = GOALS.get(flag)
        verdict = ""
        if goal is not None:
            met = predicted > 0 and tp / predicted >= goal
            verdict = f"precision >= {goal}: {'met' if met else 'not met'}"
        print(f"| {flag} | {wanted} | {predicted} | {ratio(tp, predicted)} | {ratio(tp, wanted)} "
              f"| {verdict} |")  # fmt: skip
    if mismatches:
        print(f"\n### Wrong citations: {len(mismatches)} citations in {args.mismatch_drafts} "
              f"author-year drafts of ACL records without PDF (seed {args.seed}; the library "
              f"only)\n")  # fmt: skip
        print("\n".join(mismatch_score(mismatches)))
        cases = defaultdict(int)
        for item, _ in mismatches:
            cases[item.case] += 1
        print("\nCases: " + ", ".join(f"{case} {n}" for case, n in sorted(cases.items())) + ".")
        mismatch_timings.sort()
        print(f"Per draft: median {mismatch_timings[len(mismatch_timings) // 2]:.0f} ms, "
              f"max {mismatch_timings[-1]:.0f} ms.")  # fmt: skip
    timings.sort()
    print(f"\nPer draft ({args.per_draft} citations): median {timings[len(timings) // 2]:.0f} ms, "
          f"max {timings[-1]:.0f} ms.")  # fmt: skip
    if args.calibrate:
        print("\n| case | n | similarities (sorted) |\n|---|---:|---|")
        for case, values in sorted(similarities.items()):
            shown = " ".join(f"{v:.2f}" for v in sorted(values))
            print(f"| {case} | {len(values)} | {shown} |")


if __name__ == "__main__":
    main()

"""Reading the citing sentence against the papers a citation could mean, for papers
without a PDF to check it on: the sentence is compared with each paper's title and
abstract, with support.py's measure (the share of the sentence's content words the text
holds, averaged with the cosine of the library's first-tier embeddings).

It decides three things (thresholds from benchmarks/bench_citations.py's mismatch drafts,
docs/CITATION-CHECK.md):
- among several papers an author-year marker fits ("(Sennrich et al., 2016)"), the one
  the sentence clearly picks: it fits from FIT_MIN and MARGIN more than the next;
- a marker whose author has no paper that year: the paper of a nearby year the sentence
  clearly picks (a wrong year, reported as a metadata mismatch);
- a resolved paper the sentence does not fit (below FIT_LOW) while another paper of the
  same first author within NEARBY_YEARS of the cited year clearly does: the citation names
  the wrong paper. The resolution then points at the better paper and keeps the named one
  as `cited`, so the metadata check says what the citation got wrong about the paper meant.
"""

from __future__ import annotations

import numpy as np

from engines.citecheck.parse import AUTHOR_YEAR, Cite
from engines.citecheck.resolve import AMBIGUOUS, EXISTS, UNRESOLVED, Library, Resolution, Work
from engines.citecheck.support import UNSUPPORTED_BELOW, content_words
from papers.identifiers import parse_person_name
from papers.search.embedding import load_model, paper_text

FIT_LOW = UNSUPPORTED_BELOW  # below this the sentence is not about the paper
FIT_MIN = 0.5  # a paper the sentence picks fits at least this ...
MARGIN = 0.15  # ... and this much more than the next one
NEARBY_YEARS = 2
MAX_SIBLINGS = 40  # papers of one first author compared with a sentence


def claim_fits(claim: str, works: list[Work]) -> list[float]:
    """The sentence's similarity (0..1) with each paper's title and abstract."""
    words = content_words(claim)
    if not words or not works:
        return [0.0 for _ in works]
    texts = [paper_text(work.title, work.abstract) for work in works]
    vectors = load_model().encode_documents([claim, *texts])
    fits = []
    for text, vector in zip(texts, vectors[1:], strict=True):
        held = set(content_words(text))
        coverage = sum(1 for word in words if word in held) / len(words)
        cosine = max(0.0, float(np.dot(vectors[0], vector)))
        fits.append(round((coverage + cosine) / 2, 3))
    return fits


def claim_reread(cite: Cite, resolution: Resolution, library: Library) -> Resolution:
    """The resolution, revised by what the citing sentence is about (see the module)."""
    if len(content_words(cite.claim)) < 2:
        return resolution
    if resolution.status == AMBIGUOUS and resolution.candidates:
        return _pick_among(cite, resolution, library)
    if resolution.status == UNRESOLVED:
        return _nearby_year(cite, resolution, library)
    work = resolution.work
    if resolution.status == EXISTS and work is not None and work.paper_id and not work.has_pdf:
        return _other_paper(cite, resolution, library)
    return resolution


def _scored(claim: str, works: list[Work], year: int | None) -> list[tuple[float, Work]]:
    """Best fit first; between equal fits, the year nearest the cited one."""
    fits = claim_fits(claim, works)
    return sorted(
        zip(fits, works, strict=True),
        key=lambda item: (-item[0], abs((item[1].year or 0) - (year or 0))),
    )


def _clear_winner(scored: list[tuple[float, Work]], rival: float | None = None) -> bool:
    """The best fits from FIT_MIN and MARGIN more than `rival` (default: the next one)."""
    if not scored or scored[0][0] < FIT_MIN:
        return False
    if rival is None:
        rival = scored[1][0] if len(scored) > 1 else 0.0
    return scored[0][0] - rival >= MARGIN


def _picked(scored: list[tuple[float, Work]]) -> dict[str, object]:
    picked: dict[str, object] = {"among": len(scored), "fit": scored[0][0]}
    if len(scored) > 1:
        picked["next"] = scored[1][0]
    return picked


def _cited_family_year(cite: Cite, resolution: Resolution) -> tuple[str, int | None]:
    """The first author's family name and the year the citation gives."""
    reference, work = resolution.reference, resolution.work
    if cite.kind == AUTHOR_YEAR and cite.author:
        family, year = cite.author.split()[-1], cite.year[:4]
    elif reference is not None and reference.authors:
        family, year = reference.authors[0], reference.year[:4]
    elif work is not None and work.authors:
        family, year = parse_person_name(work.authors[0]).family, str(work.year or "")
    else:
        return "", None
    if not year.isdigit() and work is not None:
        year = str(work.year or "")
    return family, int(year) if year.isdigit() else None


def _pick_among(cite: Cite, resolution: Resolution, library: Library) -> Resolution:
    pool = resolution.candidates
    if resolution.via == "author_year" and cite.author:
        family = cite.author.split()[-1]
        year = int(cite.year[:4])
        pool = library.by_first_author(family, range(year, year + 1), MAX_SIBLINGS) or pool
    year_given = int(cite.year[:4]) if cite.year[:4].isdigit() else None
    scored = _scored(cite.claim, pool, year_given)
    fits = {work.paper_id: fit for fit, work in scored if work.paper_id}
    if _clear_winner(scored):
        return Resolution(
            EXISTS, scored[0][1], via=resolution.via, reference=resolution.reference,
            engines=resolution.engines, fit=scored[0][0], picked=_picked(scored),
        )  # fmt: skip
    if scored and scored[0][0] < FIT_LOW and resolution.via == "author_year":
        # None of the papers the marker names is what the sentence is about: the closest
        # stands for them, and a paper of a nearby year may be the one meant.
        closest = scored[0][1]
        named = Resolution(EXISTS, closest, via=resolution.via, engines=resolution.engines)
        other = _other_paper(cite, named, library, exclude={w.paper_id for _, w in scored})
        if other.cited is not None:
            return other
    return Resolution(
        AMBIGUOUS, candidates=[work for _, work in scored[:3]], via=resolution.via,
        reference=resolution.reference, engines=resolution.engines, fits=fits,
        reason=f"{len(scored)} papers in the library match; the sentence does not settle it",
    )  # fmt: skip


def _nearby_year(cite: Cite, resolution: Resolution, library: Library) -> Resolution:
    """An author-year marker (or a reference entry) the library holds no paper for: the
    paper of that first author within NEARBY_YEARS the sentence clearly picks."""
    family, year = _cited_family_year(cite, resolution)
    if not family or year is None:
        return resolution
    years = range(year - NEARBY_YEARS, year + NEARBY_YEARS + 1)
    pool = library.by_first_author(family, years, MAX_SIBLINGS)
    scored = _scored(cite.claim, pool, year)
    if not _clear_winner(scored):
        return resolution
    return Resolution(
        EXISTS, scored[0][1], via="author_year", reference=resolution.reference,
        engines=resolution.engines, fit=scored[0][0], picked=_picked(scored),
    )  # fmt: skip


def _other_paper(
    cite: Cite, resolution: Resolution, library: Library, exclude: set[int | None] | None = None
) -> Resolution:
    work = resolution.work
    assert work is not None
    exclude = (exclude or set()) | {work.paper_id}
    (fit,) = claim_fits(cite.claim, [work])
    resolution.fit = fit
    if fit >= FIT_LOW:
        return resolution
    family, year = _cited_family_year(cite, resolution)
    if not family or year is None:
        return resolution
    years = range(year - NEARBY_YEARS, year + NEARBY_YEARS + 1)
    pool = [
        other
        for other in library.by_first_author(family, years, MAX_SIBLINGS)
        if other.paper_id not in exclude
    ]
    scored = _scored(cite.claim, pool, year)
    if not _clear_winner(scored, rival=fit):
        return resolution
    return Resolution(
        EXISTS, scored[0][1], via=resolution.via, reference=resolution.reference,
        engines=resolution.engines, fit=scored[0][0], picked=_picked(scored),
        cited=work, cited_fit=fit,
    )  # fmt: skip

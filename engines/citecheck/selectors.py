"""`citations_check`: every citation of a draft, resolved and checked (read-only: nothing
found by the engines is kept, no highlight is made)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from core.errors import InvalidInput
from engines.citecheck.checks import metadata_mismatches, update_flags
from engines.citecheck.claim import claim_reread
from engines.citecheck.parse import STYLES, draft_parse
from engines.citecheck.resolve import EXISTS, Library, Resolution, resolve_all
from engines.citecheck.support import NOT_CHECKED, Support, support_check
from engines.registry import LOCAL_ENGINE

MAX_TEXT_CHARS = 100_000
# The sentence is about another paper than the one the citation names (claim.py).
WRONG_PAPER = "wrong_paper"


def citations_check(
    *,
    text: str,
    style_hint: str | None = None,
    engine_ids: Sequence[str] = (LOCAL_ENGINE,),
    scope: Sequence[str] | None = None,
    check_support: bool = True,
) -> dict[str, Any]:
    """Find, resolve and check every citation of `text`.

    `engine_ids`: where to look beyond the library (`local` alone: the library only).
    Returns {citations: [...], summary: {...}, engines: {...}, references: n}; each
    citation has its marker, status (exists / not_found / ambiguous / unresolved), the
    paper, mismatching metadata fields, retraction or correction flags and the support
    verdict with the best passage's page and similarity. Raises InvalidInput for an empty
    or oversized text or an unknown style_hint.
    """
    if not text.strip():
        raise InvalidInput("text is empty: give the draft to check.", field="text")
    if len(text) > MAX_TEXT_CHARS:
        raise InvalidInput(
            f"text is longer than {MAX_TEXT_CHARS:,} characters: check it in parts.",
            field="text",
        )
    if style_hint is not None and style_hint not in STYLES:
        raise InvalidInput(
            f"Unknown style_hint {style_hint!r}; one of {', '.join(STYLES)}.", field="style_hint"
        )
    draft = draft_parse(text, style_hint=style_hint)
    external = [engine for engine in engine_ids if engine != LOCAL_ENGINE]
    resolutions = resolve_all(draft, scope=scope, engine_ids=external)
    if check_support:
        # Papers without a PDF are read against the sentence through their title and
        # abstract: a wrong year or a wrong paper, and the one paper among several.
        library = Library(scope)
        resolutions = [
            claim_reread(cite, resolution, library)
            for cite, resolution in zip(draft.cites, resolutions, strict=True)
        ]

    citations: list[dict[str, Any]] = []
    engines: dict[str, dict[str, Any]] = {}
    supports: dict[tuple[str, str, int | None], Support] = {}
    for cite, resolution in zip(draft.cites, resolutions, strict=True):
        for engine, status in resolution.engines.items():
            if engines.get(engine, {}).get("status") != "ok":
                engines[engine] = {
                    k: v for k, v in status.items() if k in ("status", "outcome", "message")
                }
        entry = _entry(cite.marker, cite.kind, cite.key, cite.start, resolution)
        work = resolution.work
        if resolution.status == EXISTS and work is not None:
            reference = resolution.reference
            mismatches = metadata_mismatches(cite, reference, work)
            if reference is not None or cite.kind == "author_year":
                entry["metadata"] = mismatches or "ok"
            flags = update_flags(work)
            if resolution.cited is not None:
                flags.append(
                    {"flag": WRONG_PAPER, "cited": resolution.cited.brief(),
                     "fit": resolution.cited_fit}
                )  # fmt: skip
            if flags:
                entry["flags"] = flags
            if check_support:
                key = (cite.claim, cite.quote, work.paper_id)
                if key not in supports:
                    supports[key] = support_check(
                        claim=cite.claim, quote=cite.quote, paper_id=work.paper_id,
                        has_pdf=work.has_pdf,
                    )  # fmt: skip
                support = supports[key]
                entry["support"] = support.verdict
                if support.verdict != NOT_CHECKED and support.similarity is not None:
                    entry["page"] = support.page
                    entry["similarity"] = support.similarity
                if support.quote:
                    entry["quote"] = support.quote
        citations.append(entry)
    summary = dict(Counter(entry["status"] for entry in citations))
    verdicts = Counter(str(entry["support"]) for entry in citations if "support" in entry)
    if verdicts:
        summary["support"] = dict(verdicts)
    flagged = sum(1 for entry in citations if "flags" in entry)
    if flagged:
        summary["flagged"] = flagged
    mismatched = sum(1 for entry in citations if isinstance(entry.get("metadata"), list))
    if mismatched:
        summary["metadata_mismatch"] = mismatched
    wrong = sum(
        1 for entry in citations if any(f["flag"] == WRONG_PAPER for f in entry.get("flags", []))
    )
    if wrong:
        summary[WRONG_PAPER] = wrong
    return {
        "citations": citations,
        "summary": summary,
        "references": len(draft.references),
        "engines": engines,
    }


def _entry(marker: str, kind: str, key: str, start: int, resolution: Resolution) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "marker": marker,
        "kind": kind,
        "key": key,
        "at": start,
        "status": resolution.status,
    }
    if resolution.work is not None:
        entry["paper"] = resolution.work.brief()
        entry["via"] = resolution.via
    if resolution.fit is not None:
        entry["fit"] = resolution.fit
    if resolution.picked is not None and resolution.cited is None:
        entry["picked"] = resolution.picked
    if resolution.candidates:
        entry["candidates"] = [
            work.brief() | ({"fit": resolution.fits[work.paper_id]}
                            if work.paper_id in resolution.fits else {})
            for work in resolution.candidates
        ]  # fmt: skip
    if resolution.reason:
        entry["reason"] = resolution.reason
    if resolution.reference is not None:
        entry["reference"] = resolution.reference.label
    return entry

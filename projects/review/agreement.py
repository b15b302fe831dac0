"""Agreement between screeners who decided the same records independently: Cohen's kappa,
the records they disagree on, and how those were resolved (docs/SCREENING.md).

A record's votes are kept per screener (`ReviewCandidate.votes`, {screener: "include" |
"exclude"}); the first vote on a record decides its status, later ones are second
opinions. Where the votes differ the record is disputed until a third decision resolves
it: kept in the same field under RESOLUTION ({"decision", "by", "reason"}), it sets the
record's final status, and it is not a vote: kappa is computed on the independent votes
only, over the records the two busiest screeners both voted on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

INCLUDE = "include"
# A screener's "come back later" (projects/review/screening.py): kept among the votes until
# that screener decides, but not a vote: no status, no kappa, no disagreement.
MAYBE = "maybe"
# The key of a resolution among a record's votes. Screener names cannot start with "_"
# (projects/review/screening.py), so it never collides with one.
RESOLUTION = "_resolution"
RESERVED_PREFIX = "_"
# Where the reasons of "maybe"s are kept among a record's votes: {screener: reason}.
MAYBE_REASONS = f"{RESERVED_PREFIX}maybe"


def cohen_kappa(first: Sequence[Hashable], second: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters' categories on the same items (screening: include True /
    exclude False; extraction: a field's choices): (observed - chance agreement) /
    (1 - chance agreement), chance = sum over categories of the product of each rater's
    share. None with no items, or when chance agreement is 1 (both raters gave one and the
    same answer throughout)."""
    if len(first) != len(second):
        raise ValueError("Both raters must rate the same records.")
    n = len(first)
    if n == 0:
        return None
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / n
    left, right = Counter(first), Counter(second)
    chance = sum(left[c] * right[c] for c in left) / (n * n)
    if chance >= 1:
        return None
    return (observed - chance) / (1 - chance)


def screener_votes(record: Mapping[str, Any]) -> dict[str, str]:
    """The independent votes of one record's `votes` field (the resolution and the
    screeners' "maybe"s left out)."""
    return {k: v for k, v in record.items() if not k.startswith(RESERVED_PREFIX) and v != MAYBE}


def maybes(record: Mapping[str, Any]) -> dict[str, str]:
    """The screeners who left this record "maybe", with their reasons ("" for none)."""
    reasons = record.get(MAYBE_REASONS) or {}
    return {k: reasons.get(k, "") for k, v in record.items() if v == MAYBE}


def is_disputed(record: Mapping[str, Any]) -> bool:
    """The screeners' votes on this record differ (resolved or not)."""
    return len(set(screener_votes(record).values())) > 1


def is_unresolved(record: Mapping[str, Any]) -> bool:
    return is_disputed(record) and RESOLUTION not in record


def agreement_summary(
    votes: Mapping[int, Mapping[str, Any]], titles: Mapping[int, str], *, shown: int = 20
) -> dict[str, Any] | None:
    """Kappa of the two screeners with the most votes, over the records (paper_id ->
    votes field) both voted on; the disputed records still to resolve (up to `shown`, with
    every screener's vote) and the resolutions made (up to `shown`, with who and why).
    None with fewer than two screeners."""
    independent = {pk: screener_votes(record) for pk, record in votes.items()}
    counts = Counter(screener for record in independent.values() for screener in record)
    if len(counts) < 2:
        return None
    (a, _), (b, _) = counts.most_common(2)
    both = [pk for pk, record in independent.items() if a in record and b in record]
    first = [independent[pk][a] == INCLUDE for pk in both]
    second = [independent[pk][b] == INCLUDE for pk in both]
    kappa = cohen_kappa(first, second)
    agreed = sum(x == y for x, y in zip(first, second, strict=True))
    disputed = [pk for pk, record in votes.items() if is_disputed(record)]
    unresolved = [pk for pk in disputed if RESOLUTION not in votes[pk]]
    resolved = [pk for pk in disputed if RESOLUTION in votes[pk]]
    return {
        "screeners": dict(counts.most_common()),
        "compared": [a, b],
        "both_screened": len(both),
        "agreed": agreed,
        "kappa": None if kappa is None else round(kappa, 3),
        "disagreements_total": len(disputed),
        "unresolved": len(unresolved),
        "disagreements": [
            {"paper_id": pk, "title": titles.get(pk, ""), "votes": independent[pk]}
            for pk in unresolved[:shown]
        ],
        "resolutions": [
            {"paper_id": pk, "title": titles.get(pk, ""), **votes[pk][RESOLUTION]}
            for pk in resolved[:shown]
        ],
    }

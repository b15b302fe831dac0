"""Agreement between two screeners who decided the same records independently: Cohen's
kappa and the records they disagree on (issue 23, item 4).

A record's votes are kept per screener (`ReviewCandidate.votes`, {screener: "include" |
"exclude"}); the first vote on a record decides its status, later ones are second
opinions. Kappa is computed over the records both screeners voted on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

INCLUDE = "include"


def cohen_kappa(first: Sequence[bool], second: Sequence[bool]) -> float | None:
    """Cohen's kappa of two raters' include (True) / exclude decisions on the same records:
    (observed - chance agreement) / (1 - chance agreement). None with no records, or when
    chance agreement is 1 (both raters gave one and the same answer throughout)."""
    if len(first) != len(second):
        raise ValueError("Both raters must rate the same records.")
    n = len(first)
    if n == 0:
        return None
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / n
    first_yes, second_yes = sum(first) / n, sum(second) / n
    chance = first_yes * second_yes + (1 - first_yes) * (1 - second_yes)
    if chance >= 1:
        return None
    return (observed - chance) / (1 - chance)


def agreement_summary(
    votes: Mapping[int, Mapping[str, str]], titles: Mapping[int, str], *, shown: int = 20
) -> dict[str, Any] | None:
    """Kappa and disagreements of the two screeners with the most votes, over the records
    (paper_id -> {screener: decision}) both voted on; None with fewer than two screeners."""
    counts = Counter(screener for record in votes.values() for screener in record)
    if len(counts) < 2:
        return None
    (a, _), (b, _) = counts.most_common(2)
    both = [pk for pk, record in votes.items() if a in record and b in record]
    first = [votes[pk][a] == INCLUDE for pk in both]
    second = [votes[pk][b] == INCLUDE for pk in both]
    kappa = cohen_kappa(first, second)
    disagreements = [
        {"paper_id": pk, "title": titles.get(pk, ""), a: votes[pk][a], b: votes[pk][b]}
        for pk in both
        if votes[pk][a] != votes[pk][b]
    ]
    return {
        "screeners": dict(counts.most_common()),
        "compared": [a, b],
        "both_screened": len(both),
        "agreed": len(both) - len(disagreements),
        "kappa": None if kappa is None else round(kappa, 3),
        "disagreements": disagreements[:shown],
        "disagreements_total": len(disagreements),
    }

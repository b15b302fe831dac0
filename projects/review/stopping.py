"""When is it safe to stop screening? A statistical rule with a stated recall target, and
two simple heuristics beside it.

The rule is the hypergeometric test of Callaghan & Müller-Hansen (2020, "Statistical
stopping criteria for automated screening in systematic reviews", Systematic Reviews
9:273). The records screened since some point are treated as a random sample of those
that were left at that point (conservative under prioritisation, which screens the likely
inclusions first). The null hypothesis is "recall is below the target": then at least
floor(found / target) + 1 inclusions exist, and the records left at that point hold the
ones not yet found. If finding as few inclusions in the sample as we did would be
unlikely under it (p < 1 - confidence) for some starting point, we stop. Like the
authors' code (buscarpy), every starting point is tried and the smallest p is taken.

`recall_lower_bound` turns the same test around: the highest recall (in steps of 0.01)
that the decisions so far support at the confidence, reported as the estimated recall.

The heuristics (N consecutive exclusions; a fraction of the records screened) are
reported as such: they carry no guarantee and do not make `safe_to_stop` true.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

TARGET_RECALL = 0.95
CONFIDENCE = 0.95
CONSECUTIVE_EXCLUSIONS = 50
FRACTION_SCREENED = 0.5


def hypergeometric_p(labels: Sequence[bool], total: int, *, target_recall: float) -> float:
    """The smallest p-value, over every starting point of the sample, of the hypothesis
    that recall is below `target_recall`, for `labels` (True = included) in the order they
    were screened out of `total` records. 1.0 when nothing has been screened."""
    if not 0 < target_recall < 1:
        raise ValueError("target_recall must be between 0 and 1.")
    screened = len(labels)
    if screened == 0 or total <= 0:
        return 1.0
    if screened > total:
        raise ValueError("More records screened than there are.")
    found = sum(1 for label in labels if label)
    # The fewest inclusions there would be if recall were below the target.
    needed = math.floor(found / target_recall) + 1
    backwards = np.array(labels[::-1], dtype=np.int64)
    found_in_sample = np.cumsum(backwards)  # inclusions in the last n records
    sample_size = np.arange(1, screened + 1)
    left_at_start = total - (screened - sample_size)
    missing_at_start = needed - (found - found_in_sample)
    # More inclusions missing than records left: the hypothesis is impossible there.
    possible = missing_at_start <= left_at_start
    p = np.zeros(screened)
    # Imported here: scipy.stats costs every process a second at start (the admin and the
    # API import this module), and only a screening review asks.
    from scipy.stats import hypergeom

    p[possible] = hypergeom.cdf(
        found_in_sample[possible],
        left_at_start[possible],
        missing_at_start[possible],
        sample_size[possible],
    )
    return float(np.clip(p.min(), 0.0, 1.0))


def recall_lower_bound(labels: Sequence[bool], total: int, *, confidence: float) -> float:
    """The highest recall r (0.00-0.99, 1.0 when all records are screened) for which the
    test rejects "recall < r" at `confidence`; 0.0 when it supports none."""
    if len(labels) >= total:
        return 1.0
    alpha = 1 - confidence
    best = 0.0
    low, high = 1, 99  # the test is monotone in the target: bisect over percents
    while low <= high:
        middle = (low + high) // 2
        if hypergeometric_p(labels, total, target_recall=middle / 100) < alpha:
            best, low = middle / 100, middle + 1
        else:
            high = middle - 1
    return best


@dataclass(frozen=True)
class StoppingReport:
    """What the stopping rule and the heuristics say after the decisions so far."""

    screened: int
    total: int
    included: int
    target_recall: float
    confidence: float
    p_value: float
    safe_to_stop: bool
    estimated_recall: float
    consecutive_exclusions: int
    consecutive_exclusions_met: bool
    fraction_screened: float
    fraction_screened_met: bool

    def as_dict(self) -> dict[str, Any]:
        values = asdict(self)
        values["p_value"] = round(self.p_value, 4)
        values["fraction_screened"] = round(self.fraction_screened, 3)
        return values


def stopping_assess(
    labels: Sequence[bool],
    total: int,
    *,
    target_recall: float = TARGET_RECALL,
    confidence: float = CONFIDENCE,
    consecutive: int = CONSECUTIVE_EXCLUSIONS,
    fraction: float = FRACTION_SCREENED,
    estimate: bool = True,
) -> StoppingReport:
    """The stopping report for `labels` (True = included, in screening order) out of
    `total` records. All screened means safe to stop. `estimate=False` skips the recall
    estimate (the simulation's inner loop does not need it)."""
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1.")
    screened = len(labels)
    p = hypergeometric_p(labels, total, target_recall=target_recall)
    everything = screened >= total > 0
    run = 0
    for label in reversed(labels):
        if label:
            break
        run += 1
    share = screened / total if total else 0.0
    return StoppingReport(
        screened=screened,
        total=total,
        included=sum(1 for label in labels if label),
        target_recall=target_recall,
        confidence=confidence,
        p_value=0.0 if everything else p,
        safe_to_stop=everything or p < 1 - confidence,
        estimated_recall=(
            recall_lower_bound(labels, total, confidence=confidence) if estimate else float("nan")
        ),
        consecutive_exclusions=run,
        consecutive_exclusions_met=run >= consecutive,
        fraction_screened=share,
        fraction_screened_met=share >= fraction,
    )

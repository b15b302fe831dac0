"""Simulated screening on labelled data: how much work prioritisation saves, and whether the
stopping rule stops at the recall it promises.

A labelled dataset (ASReview's convention: `title`, `abstract`, `label_included` 1/0) is
screened by an oracle that knows the labels, in the order `prioritise.Ranker` gives after
each batch, from a seeded prior knowledge of some inclusions and exclusions; after each
batch `stopping.stopping_assess` says whether it would be safe to stop. These are the same
functions the screening tools call (projects/review/screening.py), with the same batch a
`screen_next` call returns.

The metrics follow asreview-insights, computed without the prior-knowledge records (they
were not found by the model):
- WSS@r (work saved over sampling at recall r): the share of records left unscreened
  when a fraction r of the inclusions has been found, minus 1 - r. Random order: ~0.
- RRF@10 (relevant records found): recall after screening 10 % of the records.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from projects.review import stopping
from projects.review.prioritise import DEFAULT_FEATURES, DEFAULT_MODEL, Ranker

DEFAULT_BATCH = 10


@dataclass(frozen=True)
class LabelledRecord:
    key: str  # the row number (from 1) or the dataset's own record id
    title: str
    abstract: str
    included: bool

    @property
    def text(self) -> str:
        return f"{self.title}. {self.abstract}"


# --- metrics ------------------------------------------------------------------------------------


def records_to_recall(order_labels: Sequence[bool], recall: float) -> int | None:
    """Records screened (in this order) when a fraction `recall` of the inclusions had been
    found; None if there are no inclusions."""
    relevant = sum(order_labels)
    if relevant == 0:
        return None
    needed = math.ceil(round(recall * relevant, 9))
    found = 0
    for position, label in enumerate(order_labels, start=1):
        found += label
        if found >= needed:
            return position
    return None


def wss(order_labels: Sequence[bool], recall: float, total: int | None = None) -> float | None:
    """Work saved over sampling at `recall`: 1 - screened/total - (1 - recall), with the
    records never screened counted as left (`total` defaults to the order's length)."""
    total = len(order_labels) if total is None else total
    screened = records_to_recall(order_labels, recall)
    if screened is None or total == 0:
        return None
    return (total - screened) / total - (1 - recall)


def rrf(order_labels: Sequence[bool], fraction: float, total: int | None = None) -> float | None:
    """Recall after screening `fraction` of the records (rounded up)."""
    total = len(order_labels) if total is None else total
    relevant = sum(order_labels)
    if relevant == 0 or total == 0:
        return None
    return sum(order_labels[: math.ceil(round(fraction * total, 9))]) / relevant


# --- one run --------------------------------------------------------------------------------------


@dataclass
class SimulationRun:
    seed: int
    prior: list[int]  # record indices given as prior knowledge
    order: list[int]  # every screened record index, prior first, in screening order
    stopped_at: int | None  # records screened (prior included) when the rule said stop
    recall_at_stop: float | None
    metrics: dict[str, float | None] = field(default_factory=dict)


def simulate(
    records: Sequence[LabelledRecord],
    *,
    seed: int,
    prior_included: int = 1,
    prior_excluded: int = 1,
    model: str = DEFAULT_MODEL,
    batch: int = DEFAULT_BATCH,
    target_recall: float = stopping.TARGET_RECALL,
    confidence: float = stopping.CONFIDENCE,
    ranker: Ranker | None = None,
) -> SimulationRun:
    """Screen `records` with the oracle until the stopping rule fires with every inclusion
    found (or nothing is left). The prior records are drawn with `seed`; ties and the
    search order (here: the dataset's order) are otherwise deterministic."""
    labels = [record.included for record in records]
    positives = [i for i, label in enumerate(labels) if label]
    negatives = [i for i, label in enumerate(labels) if not label]
    if len(positives) < prior_included or len(negatives) < prior_excluded:
        raise ValueError("The dataset has too few inclusions or exclusions for the prior.")
    rng = random.Random(seed)
    prior = rng.sample(positives, prior_included) + rng.sample(negatives, prior_excluded)
    ranker = ranker or Ranker([record.text for record in records], model=model)
    known = {index: labels[index] for index in prior}
    order = list(prior)
    pending = [i for i in range(len(records)) if i not in known]
    stopped_at: int | None = None
    relevant = len(positives)

    def safe(screened: list[bool]) -> bool:
        return stopping.stopping_assess(
            screened, len(records), target_recall=target_recall, confidence=confidence,
            estimate=False,
        ).safe_to_stop  # fmt: skip

    while pending:
        ranked = ranker.order(known, pending)
        if sum(known.values()) == relevant and stopped_at is None:
            # Every inclusion is found: each further batch is all exclusions, whatever
            # the model's order, so where the rule fires follows without retraining.
            order += _exclusions_until_stop(
                [labels[i] for i in order], [r.index for r in ranked], batch, safe
            )
            stopped_at = len(order)
            break
        for item in ranked[:batch]:
            known[item.index] = labels[item.index]
            order.append(item.index)
        taken = set(order[-batch:])
        pending = [i for i in pending if i not in taken]
        if stopped_at is None and safe([labels[i] for i in order]):
            stopped_at = len(order)
        if stopped_at is not None and sum(known.values()) == relevant:
            break
    recall_at_stop = None
    if stopped_at is not None:
        recall_at_stop = sum(labels[i] for i in order[:stopped_at]) / relevant
    return SimulationRun(
        seed=seed,
        prior=prior,
        order=order,
        stopped_at=stopped_at,
        recall_at_stop=recall_at_stop,
        metrics={
            **run_metrics(labels, order, prior),
            **heuristic_stop(labels, order, stopping.CONSECUTIVE_EXCLUSIONS),
        },
    )


def heuristic_stop(
    labels: Sequence[bool], order: Sequence[int], consecutive: int
) -> dict[str, float | None]:
    """Where the "N consecutive exclusions" heuristic would have stopped this run (records
    screened, prior included) and the recall then; None if it never fired in `order`."""
    relevant = sum(labels)
    run = found = 0
    for position, index in enumerate(order, start=1):
        found += labels[index]
        run = 0 if labels[index] else run + 1
        if run >= consecutive:
            return {"consecutive_stop": position, "consecutive_recall": found / relevant}
    return {"consecutive_stop": None, "consecutive_recall": None}


def _exclusions_until_stop(
    screened: list[bool], ranked: list[int], batch: int, safe: Callable[[list[bool]], bool]
) -> list[int]:
    """The first records of `ranked` (all exclusions) screened, `batch` at a time, until
    the rule says stop (or none are left): the rule is monotone in further exclusions,
    so the number of batches is found by bisection."""
    batches = math.ceil(len(ranked) / batch)
    low, high = 1, batches
    while low < high:
        middle = (low + high) // 2
        if safe(screened + [False] * min(middle * batch, len(ranked))):
            high = middle
        else:
            low = middle + 1
    return ranked[: min(low * batch, len(ranked))]


def run_metrics(labels: Sequence[bool], order: Sequence[int], prior: Sequence[int]) -> dict:
    """WSS@95, WSS@100 and RRF@10 of a screening order, without the prior records."""
    prior_set = set(prior)
    after_prior = [labels[i] for i in order if i not in prior_set]
    total = len(labels) - len(prior_set)
    return {
        "wss@95": wss(after_prior, 0.95, total),
        "wss@100": wss(after_prior, 1.0, total),
        "rrf@10": rrf(after_prior, 0.10, total),
    }


def simulate_seeds(
    records: Sequence[LabelledRecord],
    *,
    seeds: Sequence[int],
    features: str = DEFAULT_FEATURES,
    vectors: np.ndarray | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Runs with each seed (one TF-IDF fit and one encoding shared) and the medians over
    them. `vectors`: the records' embeddings if already computed (features embeddings or
    both), else they are encoded here."""
    ranker = Ranker(
        [record.text for record in records],
        model=options.get("model", DEFAULT_MODEL),
        features=features,
        vectors=vectors,
    )
    runs = [simulate(records, seed=seed, ranker=ranker, **options) for seed in seeds]
    return {"runs": runs, "median": medians(runs)}


def medians(runs: Sequence[SimulationRun]) -> dict[str, float | None]:
    def median(values: list[float | None]) -> float | None:
        present = [value for value in values if value is not None]
        return statistics.median(present) if present else None

    result = {name: median([run.metrics[name] for run in runs]) for name in runs[0].metrics}
    result["stopped_at"] = median([run.stopped_at for run in runs])
    result["recall_at_stop"] = median([run.recall_at_stop for run in runs])
    return result


# --- datasets -------------------------------------------------------------------------------------

# ASReview's column names (asreview.data.base_reader, `__alternative_column_names__`), matched
# on the lowercased, stripped header; for each field the first name a record has is read.
# `label_included` comes first: the name the issue and the SYNERGY datasets use.
TITLE_KEYS = ("title", "primary_title")
ABSTRACT_KEYS = ("abstract", "notes_abstract", "abstract note")
LABEL_KEYS = (
    "label_included", "asreview_label", "included", "label", "final_included",
    "included_label", "included_final", "included_flag", "include",
)  # fmt: skip
ID_KEYS = ("record_id", "id")
INCLUDED_VALUES = {"1", "1.0", "yes", "y", "true"}
EXCLUDED_VALUES = {"0", "0.0", "no", "n", "false"}
NOT_SEEN_VALUES = {"", "-1", "-1.0", "nan"}  # ASReview's "not seen": no label
# RIS: ASReview writes the label as a word of an N1 note, among any other notes.
RIS_LABEL = re.compile(r"\bASReview_(relevant|irrelevant|not_seen)\b", re.IGNORECASE)
RIS_TAG = re.compile(r"^([A-Z][A-Z0-9])  -(?: (.*))?$")
DELIMITERS = (",", ";", "\t")


def dataset_load(path: Path) -> list[LabelledRecord]:
    """Records of a labelled dataset in ASReview's convention: CSV (comma, semicolon or tab
    separated), TSV/TAB or JSONL (one object a line) with a title, an abstract and a label
    under any of ASReview's column names (`label_included`, `included`, `label`, ...; 1/0,
    yes/no, y/n), or RIS (TI/T1, AB/N2, the label as a word of an N1 note:
    ASReview_relevant / ASReview_irrelevant). Records without a label (empty, -1,
    ASReview_not_seen) are skipped. UTF-8, else Latin-1. ValueError for an unknown format,
    a label that is not one of those values, or a dataset without labels."""
    suffix = path.suffix.lower()
    text = _read_text(path)
    rows: list[dict[str, Any]]
    if suffix in (".csv", ".tsv", ".tab"):
        delimiter = "\t" if suffix != ".csv" else _csv_delimiter(text)
        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
        rows = [_normalised(row) for row in reader]
    elif suffix in (".jsonl", ".ndjson"):
        rows = [_normalised(json.loads(line)) for line in text.splitlines() if line.strip()]
    elif suffix in (".ris", ".txt"):
        rows = _ris_rows(text)
    else:
        raise ValueError(
            f"Unknown dataset format {suffix!r}: use .csv, .tsv, .tab, .jsonl or .ris."
        )
    records = []
    for number, row in enumerate(rows, start=1):
        label = _label(row, number)
        if label is None:
            continue
        key = str(_first(row, ID_KEYS) or number)
        title = str(_first(row, TITLE_KEYS) or "")
        records.append(LabelledRecord(key, title, str(_first(row, ABSTRACT_KEYS) or ""), label))
    if not records:
        raise ValueError(f"{path} has no labelled records (label_included 0/1).")
    return records


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _csv_delimiter(text: str) -> str:
    """The delimiter whose split of the header names a title or label column (as
    pandas' sniffing does for ASReview); a comma if none does."""
    header = text.split("\n", 1)[0]
    for delimiter in DELIMITERS:
        names = {name.strip().lower() for name in next(csv.reader([header], delimiter=delimiter))}
        if names & {*TITLE_KEYS, *LABEL_KEYS}:
            return delimiter
    return ","


def _normalised(row: dict[Any, Any]) -> dict[str, Any]:
    return {str(key).strip().lower(): value for key, value in row.items() if key is not None}


def _first(row: dict[str, Any], keys: Sequence[str]) -> Any:
    """The value of the first of `keys` the row has (empty or not), as ASReview picks one
    column per field; None if it has none."""
    return next((row[key] for key in keys if key in row), None)


def _label(row: dict[str, Any], number: int) -> bool | None:
    value = _first(row, LABEL_KEYS)
    text = "" if value is None else str(value).strip().lower()
    if text in INCLUDED_VALUES:
        return True
    if text in EXCLUDED_VALUES:
        return False
    if text in NOT_SEEN_VALUES:
        return None
    raise ValueError(f"Record {number}: label {value!r} is not 1/0, yes/no or empty.")


def _ris_rows(text: str) -> list[dict[str, Any]]:
    """RIS records as rows: the first TI (else T1) as title, AB (else N2) as abstract, the
    ASReview label from the N1 notes, ID as record_id. A line without a tag continues the
    field before it."""
    rows: list[dict[str, Any]] = []
    fields: dict[str, list[str]] = {}
    last = ""
    for line in text.splitlines():
        match = RIS_TAG.match(line.rstrip())
        if match is None:
            if last and line.strip() and fields.get(last):
                fields[last][-1] = f"{fields[last][-1]} {line.strip()}"
            continue
        last, value = match.group(1), (match.group(2) or "").strip()
        if last == "ER":
            rows.append(_ris_row(fields, len(rows) + 1))
            fields, last = {}, ""
        else:
            fields.setdefault(last, []).append(value)
    return rows


def _ris_row(fields: dict[str, list[str]], number: int) -> dict[str, Any]:
    def first(*tags: str) -> str:
        return next((fields[tag][0] for tag in tags if fields.get(tag)), "")

    row: dict[str, Any] = {"title": first("TI", "T1"), "abstract": first("AB", "N2")}
    if first("ID"):
        row["record_id"] = first("ID")
    labels = {label.lower() for note in fields.get("N1", []) for label in RIS_LABEL.findall(note)}
    if len(labels) > 1:
        raise ValueError(f"Record {number}: more than one ASReview label in its notes.")
    if labels:
        row["label_included"] = {"relevant": 1, "irrelevant": 0, "not_seen": -1}[labels.pop()]
    return row

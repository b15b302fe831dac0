"""Screening metrics, the stopping rule and the simulation, on hand-computed cases (issue 23)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from projects.review.agreement import agreement_summary, cohen_kappa
from projects.review.prioritise import SEARCH_RANK, SEARCH_RANK_ONE_CLASS, Ranker
from projects.review.simulation import (
    dataset_load,
    heuristic_stop,
    records_to_recall,
    rrf,
    run_metrics,
    simulate,
    wss,
)
from projects.review.stopping import hypergeometric_p, recall_lower_bound, stopping_assess
from tests.projects.review.builders import OTHER, TOPIC, labelled, write_sets

T, F = True, False


# --- WSS and RRF ---------------------------------------------------------------------------------


def test_wss_counts_the_records_left_when_the_recall_is_reached() -> None:
    order = [T, F, T, F, F, F, F, F, F, F]  # 10 records, 2 inclusions
    # 95 % of 2 inclusions needs both: found at record 3, 7 of 10 left.
    assert records_to_recall(order, 0.95) == 3
    assert wss(order, 0.95) == pytest.approx(7 / 10 - 0.05)
    assert wss(order, 1.0) == pytest.approx(0.7)
    # Half the inclusions: the first record.
    assert wss(order, 0.5) == pytest.approx(9 / 10 - 0.5)


def test_wss_of_the_worst_order_is_zero_and_unscreened_records_count_as_saved() -> None:
    assert wss([F, F, F, T], 1.0) == 0.0
    # Both inclusions in the first two of ten records, the rest never screened.
    assert wss([T, T], 1.0, total=10) == pytest.approx(0.8)
    assert wss([F, F], 1.0) is None  # nothing to find


def test_rrf_is_the_recall_after_a_share_of_the_records() -> None:
    order = [T, F, T, F, F, F, F, F, F, F]
    assert rrf(order, 0.10) == 0.5  # 1 record of 10 screened: 1 of 2 inclusions
    assert rrf(order, 0.30) == 1.0
    assert rrf(order + [F] * 10, 0.10) == 0.5  # 2 of 20 records
    assert rrf(order + [F] * 10, 0.11) == 1.0  # 2.2 of 20: 3 (rounded up)


def test_run_metrics_leave_the_prior_records_out() -> None:
    labels = [T, F, T, F, F, T]
    # Prior: records 0 (included) and 1 (excluded); then 3, 2, 4, 5.
    metrics = run_metrics(labels, [0, 1, 3, 2, 4, 5], prior=[0, 1])
    # Without the prior: [F, T, F, T], 4 records, both inclusions at the 4th.
    assert metrics["wss@100"] == 0.0
    assert metrics["wss@95"] == pytest.approx(0.0 - 0.05)
    assert metrics["rrf@10"] == 0.0


def test_the_consecutive_exclusions_heuristic_is_placed_and_its_recall_counted() -> None:
    labels = [T, F, F, T, F, F, F, T]
    # Screened: 0 (T), then 1, 2, 4, 5: four exclusions in a row at the 5th record.
    found = heuristic_stop(labels, [0, 1, 2, 4, 5, 3, 6, 7], consecutive=4)
    assert found == {"consecutive_stop": 5, "consecutive_recall": 1 / 3}
    assert heuristic_stop(labels, [0, 3, 7, 1], consecutive=4)["consecutive_stop"] is None


# --- the stopping rule ---------------------------------------------------------------------------


def test_with_nothing_found_the_test_is_one_minus_the_share_screened() -> None:
    # H0: at least one inclusion among 100; none in the 10 screened: P = 90/100.
    assert hypergeometric_p([F] * 10, 100, target_recall=0.95) == pytest.approx(0.9)
    assert hypergeometric_p([], 100, target_recall=0.95) == 1.0


def test_the_sample_after_the_last_inclusion_decides_by_hand() -> None:
    # One inclusion, then 96 exclusions of the 99 left: H0 says one more is among those
    # 99; missing it in 96 draws has probability 3/99.
    labels = [T] + [F] * 96
    assert hypergeometric_p(labels, 100, target_recall=0.95) == pytest.approx(3 / 99)
    assert stopping_assess(labels, 100).safe_to_stop
    # After 90 exclusions: 9/99 = 0.091 from that start, and 1 - (91*90)/(100*99) = 0.173
    # over every record; the smaller is not below 0.05.
    shorter = [T] + [F] * 90
    assert hypergeometric_p(shorter, 100, target_recall=0.95) == pytest.approx(9 / 99)
    report = stopping_assess(shorter, 100)
    assert not report.safe_to_stop and report.p_value == pytest.approx(9 / 99)


def test_a_lower_target_or_confidence_stops_sooner() -> None:
    labels = [T] * 8 + [F] * 50  # 8 found early, 50 exclusions since, of 100 records
    strict = stopping_assess(labels, 100)
    loose = stopping_assess(labels, 100, target_recall=0.8, confidence=0.8)
    assert not strict.safe_to_stop and loose.safe_to_stop
    # Recall < 0.8 means >= 11 inclusions, 3 among the 92 left after the 8th record;
    # none in 50 draws: C(42,3)/C(92,3) = 0.091 < 0.2.
    expected = (42 * 41 * 40) / (92 * 91 * 90)
    assert loose.p_value == pytest.approx(expected)


def test_estimated_recall_is_the_highest_target_the_test_supports() -> None:
    labels = [T] * 8 + [F] * 30
    bound = recall_lower_bound(labels, 100, confidence=0.95)
    assert 0 < bound < 0.95
    assert hypergeometric_p(labels, 100, target_recall=bound) < 0.05
    assert hypergeometric_p(labels, 100, target_recall=bound + 0.01) >= 0.05
    assert recall_lower_bound([T, F], 2, confidence=0.95) == 1.0  # everything screened
    assert stopping_assess([T, F], 2).safe_to_stop


def test_heuristics_are_reported_beside_the_rule() -> None:
    report = stopping_assess([T] + [F] * 60, 200, consecutive=50, fraction=0.5)
    assert report.consecutive_exclusions == 60 and report.consecutive_exclusions_met
    assert report.fraction_screened == pytest.approx(61 / 200)
    assert not report.fraction_screened_met
    assert not report.safe_to_stop  # heuristics never make it safe by themselves
    assert set(report.as_dict()) >= {"estimated_recall", "safe_to_stop", "p_value"}


# --- ranking and simulation ----------------------------------------------------------------------


def test_without_both_kinds_of_decision_the_search_rank_stays() -> None:
    ranker = Ranker([r.text for r in labelled()])
    pending = [3, 1, 2]
    assert [(r.index, r.reason) for r in ranker.order({}, pending)] == [
        (3, SEARCH_RANK), (1, SEARCH_RANK), (2, SEARCH_RANK),
    ]  # fmt: skip
    assert {r.reason for r in ranker.order({0: False}, pending)} == {SEARCH_RANK_ONE_CLASS}


def test_the_model_puts_the_topic_first_after_one_inclusion_and_one_exclusion() -> None:
    records = labelled()
    ranker = Ranker([r.text for r in records])
    first_topic = next(i for i, r in enumerate(records) if r.included)
    known = {first_topic: True, 0: False}
    pending = [i for i in range(len(records)) if i not in known]
    ranked = ranker.order(known, pending)
    top = [records[r.index].included for r in ranked[: len(TOPIC) - 1]]
    assert sum(top) >= len(TOPIC) - 2  # the search order had none of them near the top
    assert ranked[0].reason.startswith("model score")
    assert ranked[0].score is not None and ranked[0].score >= ranked[-1].score


def test_simulation_is_seeded_and_beats_the_search_order() -> None:
    records = labelled()
    one = simulate(records, seed=3, batch=2)
    again = simulate(records, seed=3, batch=2)
    assert one.order == again.order and one.prior == again.prior
    assert sorted(one.order[:2]) == sorted(one.prior)
    assert records[one.prior[0]].included and not records[one.prior[1]].included
    # The search order would need every record to reach all inclusions (WSS@100 = 0).
    search_order = [r.included for r in records]
    assert wss(search_order, 1.0) == 0.0
    assert one.metrics["wss@100"] is not None and one.metrics["wss@100"] > 0.3
    assert one.stopped_at is not None and one.recall_at_stop == 1.0


# --- datasets and the command --------------------------------------------------------------------


def test_datasets_load_in_asreview_convention(tmp_path: Path) -> None:
    for path in write_sets(tmp_path).values():
        records = dataset_load(path)
        assert len(records) == len(TOPIC) + len(OTHER), path
        assert sum(r.included for r in records) == len(TOPIC), path
        assert records[-1].title == TOPIC[-1]
    (tmp_path / "set.xlsx").write_text("")
    with pytest.raises(ValueError, match="Unknown dataset format"):
        dataset_load(tmp_path / "set.xlsx")


def test_datasets_load_under_asreviews_other_column_names_and_label_values(
    tmp_path: Path,
) -> None:
    """What ASReview reads, read the same: column names in any case and its alternatives
    (primary_title, abstract note, notes_abstract, included, final_included, ...), labels
    yes/no/y/n, -1 or empty for "not seen" (skipped), a semicolon-separated Latin-1 CSV."""
    semicolons = tmp_path / "export.csv"
    semicolons.write_bytes(
        "Record_ID;Primary_Title;Abstract Note;Included\n"
        "r1;Caf\u00e9 queues;about queues;y\n"
        "r2;Bird radar;about birds;N\n"
        "r3;Not seen yet;;\n"
        "r4;Also not seen;;-1\n".encode("latin-1")
    )
    records = dataset_load(semicolons)
    assert [(r.key, r.title, r.abstract, r.included) for r in records] == [
        ("r1", "Caf\u00e9 queues", "about queues", True),
        ("r2", "Bird radar", "about birds", False),
    ]
    tab = tmp_path / "set.tab"
    tab.write_text("title\tnotes_abstract\tfinal_included\nA\tabout a\t1\nB\tabout b\t0\n")
    assert [(r.abstract, r.included) for r in dataset_load(tab)] == [("about a", T), ("about b", F)]
    jsonl = tmp_path / "set.jsonl"
    jsonl.write_text(
        json.dumps({"primary_title": "A", "label": True}) + "\n"
        + json.dumps({"Title": "B", "asreview_label": 0}) + "\n"
    )  # fmt: skip
    assert [(r.title, r.included) for r in dataset_load(jsonl)] == [("A", T), ("B", F)]
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("title,label_included\nA,1\nB,maybe\n")
    with pytest.raises(ValueError, match="Record 2: label 'maybe'"):
        dataset_load(wrong)
    with pytest.raises(CommandError, match="Record 2"):
        call_command("simulate_screening", str(wrong))


def test_ris_labels_are_read_from_any_note_as_asreview_writes_them(tmp_path: Path) -> None:
    """ASReview's RIS: the label is a word of an N1 note, beside other notes; AB before N2
    (not both); T1 when there is no TI; a line without a tag continues its field;
    ASReview_not_seen is no label; two labels on one record are an error."""
    ris = tmp_path / "export.ris"
    ris.write_text(
        "TY  - JOUR\nTI  - Long documents\nAB  - Sparse attention\nfor long texts.\n"
        "N2  - Sparse attention for long texts.\nN1  - Imported from Scopus\n"
        "N1  - ASReview_relevant; checked twice\nID  - 17\nER  - \n\n"
        "TY  - JOUR\nT1  - Bird radar\nN1  - ASReview_irrelevant ASReview_prior\nER  -\n"
        "TY  - JOUR\nTI  - Unscreened\nN1  - ASReview_not_seen\nER  - \n"
    )
    records = dataset_load(ris)
    assert [(r.key, r.title, r.abstract, r.included) for r in records] == [
        ("17", "Long documents", "Sparse attention for long texts.", True),
        ("2", "Bird radar", "", False),
    ]
    ris.write_text(
        "TY  - JOUR\nTI  - X\nN1  - ASReview_relevant\nN1  - ASReview_irrelevant\nER  -\n"
    )
    with pytest.raises(ValueError, match="more than one ASReview label"):
        dataset_load(ris)


def test_simulate_screening_json_lets_anyone_recompute_the_metrics(tmp_path: Path) -> None:
    path = write_sets(tmp_path)["csv"]
    out = io.StringIO()
    call_command("simulate_screening", str(path), "--seeds", "3", "--batch", "2", "--json",
                 stdout=out)  # fmt: skip
    result = json.loads(out.getvalue())
    assert len(result["runs"]) == 3 and result["median"]["wss@95"] is not None
    labels = {r.key: r.included for r in dataset_load(path)}
    for run in result["runs"]:
        assert run["order"][:2] == run["prior"]
        after = [labels[key] for key in run["order"] if key not in run["prior"]]
        assert wss(after, 0.95, total=len(labels) - 2) == pytest.approx(run["wss@95"])
        assert rrf(after, 0.10, total=len(labels) - 2) == pytest.approx(run["rrf@10"])
    text = io.StringIO()
    call_command("simulate_screening", str(path), "--seeds", "2", stdout=text)
    assert "WSS@95" in text.getvalue() and "stopping rule" in text.getvalue()
    with pytest.raises(CommandError):
        call_command("simulate_screening", str(tmp_path / "missing.csv"))


def test_with_only_exclusions_the_review_question_stands_in_for_an_inclusion() -> None:
    records = labelled()
    ranker = Ranker([r.text for r in records])
    known = {0: False, 1: False}  # two off-topic records excluded, nothing included yet
    pending = [i for i in range(len(records)) if i not in known]
    assert {r.reason for r in ranker.order(known, pending)} == {SEARCH_RANK_ONE_CLASS}
    ranked = ranker.order(known, pending, question="sparse attention for long documents")
    assert "the question as inclusion" in ranked[0].reason
    assert all(records[r.index].included for r in ranked[:3])


# --- two screeners -------------------------------------------------------------------------------


def test_cohen_kappa_by_hand() -> None:
    # 10 records: both include 3, both exclude 5, they disagree on 2 (one each way).
    first = [T, T, T, T, F, F, F, F, F, F]
    second = [T, T, T, F, T, F, F, F, F, F]
    # observed 0.8; chance 0.4 * 0.4 + 0.6 * 0.6 = 0.52; kappa = 0.28 / 0.48.
    assert cohen_kappa(first, second) == pytest.approx(0.28 / 0.48)
    assert cohen_kappa(first, first) == 1.0
    assert cohen_kappa([T, F], [F, T]) == pytest.approx(-1.0)
    assert cohen_kappa([], []) is None
    assert cohen_kappa([F, F], [F, F]) is None  # chance agreement 1: undefined


def test_agreement_compares_the_two_busiest_screeners_on_what_both_decided() -> None:
    votes = {
        1: {"agent": "include", "ann": "include"},
        2: {"agent": "exclude", "ann": "include"},
        3: {"agent": "exclude", "ann": "exclude"},
        4: {"agent": "exclude"},
    }
    summary = agreement_summary(votes, {2: "Disputed"})
    assert summary is not None
    assert summary["compared"] == ["agent", "ann"] and summary["both_screened"] == 3
    assert summary["disagreements"] == [
        {"paper_id": 2, "title": "Disputed", "votes": {"agent": "exclude", "ann": "include"}}
    ]
    assert summary["disagreements_total"] == summary["unresolved"] == 1
    # observed 2/3; agent includes 1/3, ann 2/3: chance 2/9 + 2/9 = 4/9.
    assert summary["kappa"] == pytest.approx(round((2 / 3 - 4 / 9) / (1 - 4 / 9), 3))
    assert agreement_summary({1: {"agent": "include"}}, {}) is None

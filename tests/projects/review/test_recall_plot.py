"""The recall-curve plot and the embedding features of screening (issue 23, items 3 and 4):
the SVG parses and its curves are the run's data; `simulate_screening --plot` writes one;
the ranker reads TF-IDF, the library's MiniLM embeddings, or both."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from projects.review.prioritise import BOTH, EMBEDDINGS, NAIVE_BAYES, Ranker, encode_texts
from projects.review.recall_plot import recall_curve_points, recall_curve_svg
from projects.review.simulation import dataset_load
from tests.projects.review.builders import TOPIC, labelled, write_sets

SVG = "{http://www.w3.org/2000/svg}"
T, F = True, False


def polylines(svg: str) -> dict[str, list[tuple[float, float]]]:
    root = ET.fromstring(svg)  # noqa: S314 (our own output)
    assert root.tag == f"{SVG}svg"
    return {
        line.get("id", ""): [
            (float(x), float(y))
            for x, y in (point.split(",") for point in line.get("points", "").split())
        ]
        for line in root.iter(f"{SVG}polyline")
    }


def test_the_curve_steps_at_each_inclusion_and_runs_to_the_total() -> None:
    # Inclusions 1st, 4th, 5th of 6 screened; 10 records in all.
    points = recall_curve_points([T, F, F, T, T, F], total=10)
    assert points == [(0, 0), (1, 1), (3, 1), (4, 2), (5, 3), (10, 3)]
    assert recall_curve_points([], total=4, relevant=2) == [(0, 0), (4, 0)]


def test_the_svg_parses_and_its_curves_are_the_data() -> None:
    svg = recall_curve_svg([F, T, F, T, F, F], total=20, stopped_at=6, title="a <run> & more")
    lines = polylines(svg)
    assert lines["model"] == [(0, 0), (1, 0), (2, 1), (3, 1), (4, 2), (20, 2)]
    assert lines["random"] == [(0, 0), (20, 2)]
    assert lines["perfect"] == [(0, 0), (2, 2), (20, 2)]
    root = ET.fromstring(svg)  # noqa: S314
    stop = next(e for e in root.iter(f"{SVG}line") if e.get("id") == "stop")
    assert (stop.get("x1"), stop.get("x2")) == ("6", "6")
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "stopping rule: 6 screened, recall 1.00" in texts and "a <run> & more" in texts
    assert "records screened" in texts and "relevant records found" in texts
    assert "stop" not in polylines(recall_curve_svg([T, F], total=2))  # no rule: no mark
    with pytest.raises(ValueError):
        recall_curve_svg([F, F], total=2)
    with pytest.raises(ValueError):
        recall_curve_svg([T, F, F], total=2)


def test_simulate_screening_plots_the_first_runs_recall_curve(tmp_path: Path) -> None:
    path = write_sets(tmp_path)["csv"]
    curve = tmp_path / "curve.svg"
    out = io.StringIO()
    call_command("simulate_screening", str(path), "--seeds", "2", "--batch", "2", "--json",
                 "--plot", str(curve), stdout=out)  # fmt: skip
    result = json.loads(out.getvalue())
    assert result["plot"] == str(curve) and result["features"] == "tfidf"
    model = polylines(curve.read_text())["model"]
    records, included = len(labelled()), len(TOPIC)
    assert model[-1] == (records, included)  # ends at the total
    # The first point where all are found is where the run found them.
    run = result["runs"][0]
    labels = {r.key: r.included for r in dataset_load(path)}
    found_all = next(i for i in range(1, records + 1)
                     if sum(labels[k] for k in run["order"][:i]) == included)  # fmt: skip
    assert (found_all, included) in model
    with pytest.raises(CommandError, match="SVG only"):
        call_command("simulate_screening", str(path), "--plot", str(tmp_path / "curve.png"))
    with pytest.raises(CommandError, match="No folder"):
        call_command("simulate_screening", str(path), "--plot", str(tmp_path / "no" / "c.svg"))


def test_embeddings_and_tfidf_side_by_side_make_the_features() -> None:
    texts = [r.text for r in labelled()]
    vectors = np.eye(len(texts), 8, dtype=np.float32)
    tfidf = Ranker(texts)
    both = Ranker(texts, features=BOTH, vectors=vectors)
    alone = Ranker(texts, features=EMBEDDINGS, vectors=vectors)
    assert tfidf.features is not None and both.features is not None and alone.features is not None
    assert both.features.shape == (len(texts), tfidf.features.shape[1] + 8)
    assert alone.features.shape == (len(texts), 8)
    with pytest.raises(ValueError, match="Naive Bayes"):
        Ranker(texts, model=NAIVE_BAYES, features=EMBEDDINGS, vectors=vectors)
    with pytest.raises(ValueError, match="One embedding per record"):
        Ranker(texts, features=BOTH, vectors=vectors[:3])
    with pytest.raises(ValueError, match="Unknown features"):
        Ranker(texts, features="pixels")


def test_minilm_embeddings_put_the_topic_first_after_one_inclusion_and_one_exclusion() -> None:
    records = labelled()
    vectors = encode_texts([r.text for r in records])  # the library's model, for real
    assert vectors.shape == (len(records), 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)
    for features in (EMBEDDINGS, BOTH):
        ranker = Ranker([r.text for r in records], features=features, vectors=vectors)
        first_topic = next(i for i, r in enumerate(records) if r.included)
        known = {first_topic: True, 0: False}
        pending = [i for i in range(len(records)) if i not in known]
        ranked = ranker.order(known, pending)
        top = [records[r.index].included for r in ranked[: len(TOPIC) - 1]]
        assert sum(top) >= len(TOPIC) - 2, features  # the search order had none near the top
    # The review's question stands in for an inclusion with embeddings too.
    ranker = Ranker([r.text for r in records], features=EMBEDDINGS, vectors=vectors)
    ranked = ranker.order({0: False}, list(range(1, len(records))), question=TOPIC[0])
    assert records[ranked[0].index].included and "the question as inclusion" in ranked[0].reason


def test_simulate_screening_takes_the_features(tmp_path: Path) -> None:
    path = write_sets(tmp_path)["csv"]
    out = io.StringIO()
    call_command("simulate_screening", str(path), "--seeds", "1", "--batch", "2",
                 "--features", "both", stdout=out)  # fmt: skip
    assert "on both" in out.getvalue() and "WSS@95" in out.getvalue()
    with pytest.raises(CommandError, match="Naive Bayes"):
        call_command("simulate_screening", str(path), "--model", "naive_bayes",
                     "--features", "embeddings")  # fmt: skip

"""manage.py simulate_screening DATASET: prioritised screening simulated on labelled data.

See projects/review/simulation.py (what is simulated, the metrics) and docs/SCREENING.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.commands import ResearchCommand
from projects.review import stopping
from projects.review.prioritise import DEFAULT_FEATURES, DEFAULT_MODEL, FEATURES, MODELS
from projects.review.recall_plot import recall_curve_svg
from projects.review.simulation import DEFAULT_BATCH, dataset_load, simulate_seeds
from projects.review.stopping import CONSECUTIVE_EXCLUSIONS


def _share(value: str) -> float:
    number = float(value)
    if not 0.5 <= number < 1:
        raise ValueError(value)
    return number


class Command(ResearchCommand):
    help = (
        "Simulate prioritised screening on a labelled dataset in ASReview's convention (CSV, "
        "TSV, JSONL or RIS with title, abstract, label_included or another of ASReview's "
        "names): WSS@95, WSS@100, RRF@10 and where the stopping rule fired, median over seeds."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset", type=Path)
        parser.add_argument("--seeds", type=int, default=5, help="Runs (seeds 0..N-1).")
        parser.add_argument("--prior-included", type=int, default=1)
        parser.add_argument("--prior-excluded", type=int, default=1)
        parser.add_argument("--model", choices=MODELS, default=DEFAULT_MODEL)
        parser.add_argument(
            "--features",
            choices=FEATURES,
            default=DEFAULT_FEATURES,
            help="What the model reads: TF-IDF, the library's MiniLM embeddings, or both.",
        )
        parser.add_argument(
            "--batch", type=int, default=DEFAULT_BATCH, help="Records per retraining."
        )
        parser.add_argument("--target-recall", type=_share, default=stopping.TARGET_RECALL)
        parser.add_argument("--confidence", type=_share, default=stopping.CONFIDENCE)
        parser.add_argument(
            "--json", action="store_true", help="Every run, with its screening order."
        )
        parser.add_argument(
            "--plot",
            type=Path,
            metavar="CURVE.svg",
            help="Write the first seed's recall curve here (SVG).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["dataset"]
        if not path.is_file():
            raise CommandError(f"No dataset at {path}.")
        if options["seeds"] < 1 or options["batch"] < 1:
            raise CommandError("--seeds and --batch must be at least 1.")
        plot: Path | None = options["plot"]
        if plot is not None and plot.suffix.lower() != ".svg":
            raise CommandError("--plot writes SVG only: give a path ending in .svg.")
        if plot is not None and not plot.parent.is_dir():
            raise CommandError(f"No folder {plot.parent} for --plot.")
        try:
            records = dataset_load(path)
            result = simulate_seeds(
                records,
                seeds=range(options["seeds"]),
                prior_included=options["prior_included"],
                prior_excluded=options["prior_excluded"],
                model=options["model"],
                features=options["features"],
                batch=options["batch"],
                target_recall=options["target_recall"],
                confidence=options["confidence"],
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        except ImportError as exc:
            raise CommandError(f"The embedding model is not installed: {exc}") from None
        included = sum(record.included for record in records)
        if plot is not None:
            first = result["runs"][0]
            plot.write_text(
                recall_curve_svg(
                    [records[i].included for i in first.order],
                    total=len(records),
                    relevant=included,
                    stopped_at=first.stopped_at,
                    title=f"{path.name}: {options['model']}, {options['features']}, "
                    f"seed {first.seed}",
                ),
                encoding="utf-8",
            )
        if options["json"]:
            runs = [
                {
                    "seed": run.seed,
                    "prior": [records[i].key for i in run.prior],
                    "order": [records[i].key for i in run.order],
                    "stopped_at": run.stopped_at,
                    "recall_at_stop": run.recall_at_stop,
                    **run.metrics,
                }
                for run in result["runs"]
            ]
            summary = {
                "dataset": str(path),
                "records": len(records),
                "included": included,
                "model": options["model"],
                "features": options["features"],
                "batch": options["batch"],
                "target_recall": options["target_recall"],
                "confidence": options["confidence"],
                "median": result["median"],
                "runs": runs,
            }
            if plot is not None:
                summary["plot"] = str(plot)
            self.stdout.write(json.dumps(summary))
            return
        median = result["median"]
        self.stdout.write(
            f"{path.name}: {len(records)} records, {included} included; model "
            f"{options['model']} on {options['features']}, batch {options['batch']}, prior "
            f"{options['prior_included']}+{options['prior_excluded']}, "
            f"{options['seeds']} seeds (medians)"
        )
        for name in ("wss@95", "wss@100", "rrf@10"):
            self.stdout.write(f"  {name.upper():<16} {_fmt(median[name])}")
        self.stdout.write(
            f"  stopping rule    fired after {_fmt(median['stopped_at'], digits=0)} records "
            f"(recall {_fmt(median['recall_at_stop'])}; target {options['target_recall']}, "
            f"confidence {options['confidence']})"
        )
        self.stdout.write(
            f"  heuristic        {CONSECUTIVE_EXCLUSIONS} consecutive exclusions: after "
            f"{_fmt(median['consecutive_stop'], digits=0)} records (recall "
            f"{_fmt(median['consecutive_recall'])}; no guarantee)"
        )
        if plot is not None:
            self.stdout.write(f"  recall curve     {plot}")


def _fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"

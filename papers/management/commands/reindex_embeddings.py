"""Compute the embeddings semantic search needs: `manage.py reindex_embeddings [--all]
[--tier first|strong]` (the second tier, EMBEDDING_MODEL_STRONG, in the foreground); then,
for a library above VECTOR_INDEX_APPROXIMATE_ABOVE vectors, the tier's approximate graph,
built on every core and saved for the server to load at start."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.commands import ResearchCommand
from core.progress import progress_bar
from papers.imports import EXIT_BAD_INPUT, EXIT_SOME_FAILED
from papers.models import Paper
from papers.search import semantic, strong_tier
from papers.search.embedding import (
    EmbeddingModel,
    load_model,
    load_strong_model,
    strong_tier_unavailable_reason,
)
from papers.search.vector_index import strong_vector_index, vector_index
from papers.search.vector_store import embed_in_batches, save_vector_graph


class Command(ResearchCommand):
    help = (
        "Embed papers for semantic search. By default only papers with no vector from the "
        "current model (--missing-only); --all also re-checks every paper's text and "
        "re-embeds what changed; --force recomputes every vector."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--missing-only", action="store_true", default=True)
        which.add_argument("--all", action="store_true", help="Check every paper.")
        parser.add_argument(
            "--force", action="store_true", help="With --all: re-embed unchanged text too."
        )
        parser.add_argument(
            "--tier",
            choices=["first", "strong"],
            default="first",
            help="strong: the second tier (EMBEDDING_MODEL_STRONG), on every core "
            "(STRONG_EMBEDDING_THREADS).",
        )
        parser.add_argument("--batch-size", type=int, default=semantic.EMBED_CHUNK)
        parser.add_argument(
            "--no-progress", action="store_true", help="Do not draw a progress bar."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        batch_size = options["batch_size"]
        if not 1 <= batch_size <= 50_000:
            raise CommandError(
                "--batch-size must be between 1 and 50000", returncode=EXIT_BAD_INPUT
            )
        if options["force"] and not options["all"]:
            raise CommandError("--force needs --all", returncode=EXIT_BAD_INPUT)
        strong = options["tier"] == "strong"
        model = self._model(strong)
        if options["all"]:
            ids = list(Paper.objects.order_by("pk").values_list("pk", flat=True))
        elif strong:
            ids = strong_tier.papers_missing_strong()
        else:
            ids = semantic.papers_missing_embeddings()
        embed: Callable[..., semantic.EmbedOutcome] = semantic.embed_papers
        if strong:
            embed = partial(strong_tier.embed_papers_strong, threads=strong_tier.writer_threads())
        with progress_bar(
            total=len(ids),
            desc="Embedding",
            unit=" papers",
            hidden=options["no_progress"],
        ) as bar:
            outcome, failed = embed_in_batches(
                partial(embed, force=options["force"]),
                ids,
                batch_size=batch_size,
                on_progress=bar.update,
                on_error=lambda chunk, error: self.stderr.write(
                    f"batch from paper {chunk[0]} failed: {error}"
                ),
            )
        rate = outcome.embedded / outcome.seconds if outcome.seconds else 0.0
        self.stdout.write(
            f"{len(ids)} papers: {outcome.embedded} embedded, {outcome.unchanged} unchanged, "
            f"{outcome.missing} gone, {failed} failed ({model.name}, "
            f"{outcome.seconds:.1f} s, {rate:.0f} papers/s)"
        )
        index = strong_vector_index() if strong else vector_index()
        line = save_vector_graph(index, model, outcome.embedded, hidden=options["no_progress"])
        if line:
            self.stdout.write(line)
        if failed:
            raise CommandError(f"{failed} of {len(ids)} papers failed", returncode=EXIT_SOME_FAILED)

    @staticmethod
    def _model(strong: bool) -> EmbeddingModel:
        try:
            model = load_strong_model() if strong else load_model()
        except (ImportError, ValueError) as error:
            raise CommandError(
                f"Cannot load the embedding model: {error}", returncode=EXIT_BAD_INPUT
            ) from None
        if model is None:
            raise CommandError(
                f"The second tier is off here: {strong_tier_unavailable_reason()}.",
                returncode=EXIT_BAD_INPUT,
            )
        return model

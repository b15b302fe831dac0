"""The import commands' shared shape: they fill the library (papers/imports.py) and, with
--project, file every imported paper into a project, which is why they live here, a layer
above papers (docs/LAYERS.md). `manage.py import_bibtex`, `import_jsonl`, `import_zotero`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from core.bootstrap import prepare_knowledge_base
from core.commands import ResearchCommand
from core.errors import DomainError, NotFound
from core.progress import progress_bar
from engines.open_access import papers_find_and_attach, papers_without_pdf
from papers.imports import (
    ANALYZE_AFTER,
    DEFAULT_BATCH_SIZE,
    EXIT_BAD_INPUT,
    EXIT_SOME_FAILED,
    MAX_REPORTED_FAILURES,
    RawItem,
    analyze_tables,
    import_records,
)
from papers.schemas import PaperRecord
from papers.search.semantic import embed_alongside, embed_papers
from papers.search.vector_store import VectorsAlongside, embed_in_batches
from papers.services import OnSaved
from projects.retractions import retractions_check_soon
from projects.selectors import project_get
from projects.services import project_create, projects_adder

LATER_VECTORS = "`manage.py reindex_embeddings` builds them"


def add_open_access_argument(parser: CommandParser) -> None:
    parser.add_argument(
        "--open-access",
        action="store_true",
        help="Then look for an open-access PDF of each imported paper without one "
        "(arXiv, ACL Anthology, OpenAlex, Unpaywall, Semantic Scholar) and attach it.",
    )


def add_embeddings_argument(parser: CommandParser) -> None:
    parser.add_argument(
        "--no-embeddings",
        action="store_true",
        help="Do not build the imported papers' vectors now (`reindex_embeddings` does it "
        "later; until then searches rank them by their words alone).",
    )


class ImportCommand(ResearchCommand):
    """Shared shape of import commands: a file, --project, --batch-size, a progress bar,
    a summary line, failures listed with their location, and the exit codes above."""

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="File to import ('-' for standard input).")
        parser.add_argument("--project", help="Also add every imported paper to this project.")
        parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
        parser.add_argument(
            "--no-progress", action="store_true", help="Do not draw a progress bar."
        )
        add_open_access_argument(parser)
        add_embeddings_argument(parser)

    def read_items(self, path: str, options: dict[str, Any]) -> Iterator[RawItem]:
        raise NotImplementedError

    def build_record(self, data: dict[str, Any]) -> PaperRecord:
        raise NotImplementedError

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["path"]
        batch_size = options["batch_size"]
        if batch_size < 1 or batch_size > 50_000:
            raise CommandError(
                "--batch-size must be between 1 and 50000", returncode=EXIT_BAD_INPUT
            )
        # A fresh or older knowledge base is created / upgraded first, as `serve` does.
        prepare_knowledge_base(create_admin=False)
        on_saved = None
        if options.get("project"):
            on_saved = projects_adder([self.resolve_project(options["project"])])
        on_saved = _with_retraction_checks(on_saved)
        alongside = self.vectors_alongside(options)
        try:
            items = self.read_items(path, options)
            with progress_bar(
                desc="Importing",
                unit=" records",
                hidden=options["no_progress"],
            ) as bar:
                report = import_records(
                    items,
                    build=self.build_record,
                    on_saved=on_saved,
                    batch_size=batch_size,
                    on_progress=bar.update,
                    after_batch=alongside.add if alongside else None,
                )
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"Cannot read {path}: {error}", returncode=EXIT_BAD_INPUT) from None
        if report.created >= ANALYZE_AFTER:
            analyze_tables()
        for location, reason in report.failures[:MAX_REPORTED_FAILURES]:
            self.stderr.write(f"skipped {location}: {reason}")
        if report.failed > MAX_REPORTED_FAILURES:
            self.stderr.write(f"... and {report.failed - MAX_REPORTED_FAILURES} more failures")
        self.stdout.write(report.summary())
        self.embed_imported(report.paper_ids, options, alongside)
        self.find_open_access(report.paper_ids, options)
        if report.total == 0:
            raise CommandError(f"{path} holds no records.", returncode=EXIT_BAD_INPUT)
        if report.failed:
            raise CommandError(
                f"{report.failed} of {report.total} records failed", returncode=EXIT_SOME_FAILED
            )

    def vectors_alongside(self, options: dict[str, Any]) -> VectorsAlongside | None:
        """On the embedded default (no broker), the first tier's vectors made while the
        records import (semantic.embed_alongside), or None: embeddings off, or the
        model missing (said, with what to run later)."""
        if (
            options.get("no_embeddings")
            or not settings.EMBEDDINGS_ENABLED
            or not settings.CELERY_TASK_ALWAYS_EAGER
        ):
            return None
        try:
            return embed_alongside()
        except (ImportError, ValueError) as error:
            self.stderr.write(f"vectors not built ({error}); {LATER_VECTORS}")
            return None

    def embed_imported(
        self, paper_ids: list[int], options: dict[str, Any], alongside: VectorsAlongside | None
    ) -> None:
        """The first tier's vectors of the imported papers, so the new library searches at
        its default (hybrid) quality as soon as the command ends. With a Celery broker the
        workers were given them as each batch committed; on the embedded default (no
        broker) they were made alongside the records (`vectors_alongside`): what is
        left is waited for here, with a progress bar, and a batch that failed there is
        embedded again; then, for a library large enough, their approximate graph, grown
        alongside or brought up to date, saved for the server to load at start. A failure
        here loses no record: it says how to build them later."""
        if options.get("no_embeddings") or not settings.EMBEDDINGS_ENABLED or not paper_ids:
            return
        if not settings.CELERY_TASK_ALWAYS_EAGER:
            self.stdout.write(f"{len(paper_ids)} papers queued for the workers to embed")
            return
        if alongside is None:
            return  # the model is missing: said when the import began
        hidden = options["no_progress"]
        with progress_bar(
            total=alongside.behind(), desc="Embedding", unit=" papers", hidden=hidden
        ) as bar:
            outcome = alongside.finish(on_progress=bar.update)
        failed = 0
        if alongside.failed:
            again, failed = embed_in_batches(
                embed_papers,
                alongside.failed,
                on_error=lambda chunk, error: self.stderr.write(
                    f"vectors of the batch from paper {chunk[0]} not built: {error}"
                ),
            )
            outcome.add(again)
        self.stdout.write(
            f"{outcome.embedded} papers embedded, {outcome.unchanged} unchanged "
            f"({alongside.model.name}, {outcome.seconds:.1f} s after the records)"
            + (f"; {failed} not embedded: {LATER_VECTORS}" if failed else "")
        )
        line = alongside.save_graph(hidden=hidden)
        if line:
            self.stdout.write(line)

    def find_open_access(self, paper_ids: list[int], options: dict[str, Any]) -> None:
        """--open-access: look for an open-access PDF of each imported paper that has no
        PDF (engines/open_access.py, OPEN_ACCESS_CONCURRENCY at once, each source under
        its rate limit), with a progress bar and a summary line. What fails is counted;
        the import stands whatever happens here."""
        if not options.get("open_access"):
            return
        try:
            missing = papers_without_pdf(paper_ids)
            with progress_bar(
                desc="Open-access PDFs",
                total=len(missing),
                unit=" papers",
                hidden=options["no_progress"],
            ) as bar:
                found = papers_find_and_attach(missing, on_result=lambda _: bar.update(1))
        except Exception as error:  # the import is done; this is an extra
            self.stderr.write(f"Open-access PDFs: stopped ({type(error).__name__}: {error})")
            return
        for paper_id, reason in found.errors[:MAX_REPORTED_FAILURES]:
            self.stderr.write(f"open access: paper {paper_id}: {reason}")
        self.stdout.write(f"Open-access PDFs: {found.line()}")

    def resolve_project(self, ref: str) -> str:
        """The project id for --project; a new project is created when none has that name."""
        try:
            return project_get(ref=ref).id
        except NotFound:
            try:
                return project_create(name=ref).id
            except DomainError as error:
                raise CommandError(error.message, returncode=EXIT_BAD_INPUT) from None


def _with_retraction_checks(on_saved: OnSaved | None) -> OnSaved | None:
    """`on_saved` that also queues a retraction check of each imported batch, on the
    scale-out path (Celery workers do it while the import goes on). On the embedded
    default an import does not wait for checks: the scheduled check takes the new papers
    first (never checked), and `manage.py check_retractions` does them at once."""
    if settings.CELERY_TASK_ALWAYS_EAGER or not settings.RETRACTION_CHECK_ON_IMPORT:
        return on_saved

    def saved(paper_ids: list[int]) -> None:
        if on_saved is not None:
            on_saved(paper_ids)
        retractions_check_soon(paper_ids)

    return saved

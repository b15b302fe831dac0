"""Export the library, a project or chosen papers to a file in the exports folder.

    manage.py export_library --format bibtex --project thesis --output thesis-refs
    manage.py export_library --format csv --ids 12,vaswani2017attention
    manage.py export_library --format jsonl --stdout > library.jsonl
    manage.py export_library --format bibliography --style ieee --project thesis --stdout
    manage.py export_library --format bibliography --style ./my-journal.csl --ids 12

On a terminal, two progress bars (reading, writing) are drawn on standard error; log lines
print above them. Piped or with --no-progress, only the summary line (or the export, with
--stdout) is printed.

Exit codes: 0 written, 2 bad arguments (format, project, ids, file name, empty selection,
style, locale).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db.models import QuerySet

from core.commands import ResearchCommand
from core.errors import DomainError, StorageFull
from core.progress import progress_bar
from papers.exports import FORMATS, export_papers, render_export
from papers.models import Paper
from papers.selectors import papers_filter

EXIT_BAD_INPUT = 2
READ_CHUNK = 2000  # papers read (with their authors, keywords, ...) per query


def split_refs(raw: str) -> list[str]:
    """'1, smith2020, [Smith, J. 2024]' -> ['1', 'smith2020', '[Smith, J. 2024]']: commas
    inside a bracketed human id do not separate."""
    refs: list[str] = []
    current: list[str] = []
    depth = 0
    for char in raw:
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(depth - 1, 0)
        if char == "," and depth == 0:
            refs.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    refs.append("".join(current).strip())
    return [ref for ref in refs if ref]


class Command(ResearchCommand):
    help = (
        "Export papers as BibTeX, CSV, JSON, JSON Lines, Markdown, RIS, CSL-JSON or a "
        "bibliography in a CSL style into the exports folder."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--format", required=True, help=f"One of {', '.join(FORMATS)}.")
        parser.add_argument("--project", help="Only this project's papers (id or name).")
        parser.add_argument(
            "--ids", help="Only these papers: paper_ids, citekeys or ids, comma-separated."
        )
        parser.add_argument(
            "--output", help="File name without folder; the extension is added. "
            "Default: export-<UTC time>."
        )  # fmt: skip
        parser.add_argument(
            "--overwrite",
            action="store_true",
            help="Replace a file of that name (otherwise the export takes NAME-2, NAME-3, ...).",
        )
        parser.add_argument(
            "--style",
            help="For --format bibliography: a CSL style id (apa, ieee, vancouver, ...; "
            "default apa) or the path of a .csl file.",
        )
        parser.add_argument(
            "--locale", help="For --format bibliography: e.g. en-GB (default: the style's)."
        )
        parser.add_argument(
            "--no-abstracts",
            action="store_true",
            help="Leave abstracts out (most of a BibTeX export's size).",
        )
        parser.add_argument(
            "--no-progress", action="store_true", help="Do not draw the progress bars."
        )
        parser.add_argument(
            "--stdout",
            action="store_true",
            # not `stdout`: BaseCommand.execute takes that option as the output stream
            dest="print_content",
            help="Print the export instead of writing a file.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        refs = split_refs(options["ids"]) if options.get("ids") else None
        if options.get("ids") is not None and not refs:
            raise CommandError("--ids names no papers.", returncode=EXIT_BAD_INPUT)
        style = _style_argument(options.get("style"))
        locale = options.get("locale")
        abstracts = not options["no_abstracts"]
        hidden = options["no_progress"]
        try:
            papers = _read(papers_filter(refs=refs, project=options.get("project")), hidden)
            with progress_bar(
                total=len(papers), desc="Writing", unit=" papers", hidden=hidden
            ) as bar:
                if options["print_content"]:
                    content = render_export(
                        papers, options["format"], style=style, locale=locale,
                        progress=bar.update, abstracts=abstracts,
                    )  # fmt: skip
                else:
                    result = export_papers(
                        papers=papers,
                        fmt=options["format"],
                        filename=options.get("output"),
                        overwrite=options["overwrite"],
                        style=style,
                        locale=locale,
                        progress=bar.update,
                        abstracts=abstracts,
                    )
            if options["print_content"]:
                self.stdout.write(content, ending="")
                return
        except StorageFull as error:  # the disk, not the request: exit 1
            raise CommandError(error.message) from None
        except DomainError as error:
            raise CommandError(error.message, returncode=EXIT_BAD_INPUT) from None
        except OSError as error:
            raise CommandError(f"Cannot write the export: {error}") from None
        noun = "paper" if result.count == 1 else "papers"
        self.stdout.write(f"Exported {result.count} {noun} as {result.format} to {result.path}")


def _read(papers: QuerySet[Paper], hidden: bool) -> list[Paper]:
    """The papers with their relations, read a chunk at a time under a progress bar (on the
    whole library, reading takes about as long as writing)."""
    read: list[Paper] = []
    with progress_bar(total=papers.count(), desc="Reading", unit=" papers", hidden=hidden) as bar:
        for paper in papers.iterator(chunk_size=READ_CHUNK):
            read.append(paper)
            bar.update(1)
    return read


def _style_argument(value: str | None) -> str | None:
    """A style id as it is; a path ending in .csl read as the CSL document (only the
    command reads files: network clients send the CSL text itself)."""
    if not value or not value.lower().endswith(".csl"):
        return value
    try:
        return Path(value).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CommandError(f"Cannot read the style {value}: {error}",
                           returncode=EXIT_BAD_INPUT) from None  # fmt: skip

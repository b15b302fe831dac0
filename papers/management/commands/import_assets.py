"""Import paper summaries, source markdown and translations into the knowledge base.

    manage.py import_assets exported-assets/                 # a folder in the storage layout
    manage.py import_assets --paper 12 --summary deep_read summary.json --set-preferred
    manage.py import_assets --paper vaswani2017attention --source paper.md
    manage.py import_assets --paper 12 --translation zh paper.zh.md
    manage.py import_assets --paper 12 --remote --summary brief   # served by ASSET_BASE_URL

A folder holds one sub-folder per paper, named by its paper_id (or citekey), laid out like
the knowledge base's assets/ folder: `summary/<template>.json`, `source.md`,
`translation/<lang>.md`. Other files are reported and skipped, and so are symbolic links
(as `backup` does): a link could make the library serve any file the server can read, such
as `/etc/passwd` or a private key, as a paper's source. `--remote` records an asset
that ASSET_BASE_URL serves, after fetching it once to check it.

Exit codes: 0 imported, 1 some assets failed, 2 bad arguments or nothing to import.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.commands import ResearchCommand
from core.errors import DomainError
from core.progress import progress_bar
from papers.assets import Kind, asset_register_remote, asset_save
from papers.imports import EXIT_BAD_INPUT, EXIT_SOME_FAILED, MAX_REPORTED_FAILURES
from papers.selectors import paper_get


@dataclass(frozen=True)
class AssetFile:
    paper_ref: str
    kind: str
    name: str
    path: Path | None  # None: fetched from ASSET_BASE_URL

    @property
    def location(self) -> str:
        return str(self.path) if self.path else f"paper {self.paper_ref} {self.kind} {self.name}"


def _walk(directory: Path, links: list[Path]) -> list[Path]:
    """The regular files under `directory`, never through a symbolic link (listed in `links`)."""
    files: list[Path] = []
    for entry in sorted(directory.iterdir()):
        if entry.is_symlink():
            links.append(entry)
        elif entry.is_dir():
            files.extend(_walk(entry, links))
        elif entry.is_file():
            files.append(entry)
    return files


def folder_assets(folder: Path) -> tuple[list[AssetFile], list[Path], list[Path]]:
    """The assets of a folder in the storage layout, the files that do not fit it, and the
    symbolic links skipped (to files or folders, at any depth)."""
    found: list[AssetFile] = []
    unknown: list[Path] = []
    links: list[Path] = []
    for paper_dir in sorted(p for p in folder.iterdir() if not p.name.startswith(".")):
        if paper_dir.is_symlink():
            links.append(paper_dir)
            continue
        if not paper_dir.is_dir():
            unknown.append(paper_dir)
            continue
        for path in _walk(paper_dir, links):
            relative = path.relative_to(paper_dir).parts
            if relative == ("source.md",):
                found.append(AssetFile(paper_dir.name, Kind.SOURCE, "", path))
            elif len(relative) == 2 and relative[0] == "summary" and path.suffix == ".json":
                found.append(AssetFile(paper_dir.name, Kind.SUMMARY, path.stem, path))
            elif len(relative) == 2 and relative[0] == "translation" and path.suffix == ".md":
                found.append(AssetFile(paper_dir.name, Kind.TRANSLATION, path.stem, path))
            elif not path.name.startswith("."):
                unknown.append(path)
    return found, unknown, links


class Command(ResearchCommand):
    help = (
        "Import paper summaries (JSON), source markdown and translations (markdown): a folder "
        "laid out as <paper_id or citekey>/summary/<template>.json, <paper>/source.md and "
        "<paper>/translation/<lang>.md, or one file with --paper."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "path", nargs="?", help="A folder in the storage layout, or one file with --paper."
        )
        parser.add_argument("--paper", help="The paper (paper_id, citekey or id) of one file.")
        what = parser.add_mutually_exclusive_group()
        what.add_argument("--summary", metavar="TEMPLATE", help="The file is this summary.")
        what.add_argument("--source", action="store_true", help="The file is the source.")
        what.add_argument("--translation", metavar="LANG", help="The file is this translation.")
        parser.add_argument(
            "--remote", action="store_true", help="Record an asset served by ASSET_BASE_URL."
        )
        parser.add_argument(
            "--set-preferred",
            action="store_true",
            help="Make the --summary template the paper's preferred summary.",
        )
        parser.add_argument(
            "--no-progress", action="store_true", help="Do not draw a progress bar."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        items = self._items(options)
        imported = failed = 0
        failures: list[str] = []
        with progress_bar(
            items,
            desc="Importing",
            unit=" assets",
            hidden=options["no_progress"],
        ) as bar:
            for item in bar:
                try:
                    self._import(item, set_preferred=options["set_preferred"])
                    imported += 1
                except (DomainError, OSError) as error:
                    failed += 1
                    reason = error.message if isinstance(error, DomainError) else str(error)
                    failures.append(f"skipped {item.location}: {reason}")
        for line in failures[:MAX_REPORTED_FAILURES]:
            self.stderr.write(line)
        if failed > MAX_REPORTED_FAILURES:
            self.stderr.write(f"... and {failed - MAX_REPORTED_FAILURES} more failures")
        noun = "asset" if imported == 1 else "assets"
        self.stdout.write(f"Imported {imported} {noun}, {failed} failed.")
        if failed:
            raise CommandError(
                f"{failed} of {len(items)} assets failed", returncode=EXIT_SOME_FAILED
            )

    def _items(self, options: dict[str, Any]) -> list[AssetFile]:
        def bad(message: str) -> CommandError:
            return CommandError(message, returncode=EXIT_BAD_INPUT)

        path = Path(options["path"]) if options["path"] else None
        kind: str = Kind.SUMMARY
        name: str = options["summary"]
        if options["source"]:
            kind, name = Kind.SOURCE, ""
        elif options["translation"]:
            kind, name = Kind.TRANSLATION, options["translation"]
        elif not options["summary"]:
            kind = ""
        if options["set_preferred"] and not options["summary"]:
            raise bad("--set-preferred goes with --summary TEMPLATE.")

        if options["paper"]:
            if not kind:
                raise bad(
                    "With --paper, say what the file is: --summary, --source or --translation."
                )
            if options["remote"]:
                if path is not None:
                    raise bad("--remote fetches from ASSET_BASE_URL; give no file.")
                return [AssetFile(options["paper"], kind, name, None)]
            if path is None or not path.is_file():
                raise bad(f"{path or 'A file'} is not a file.")
            return [AssetFile(options["paper"], kind, name, path)]

        if kind or options["remote"]:
            raise bad("--summary, --source, --translation and --remote need --paper.")
        if path is None or not path.is_dir():
            raise bad("Give a folder in the storage layout, or --paper with one file.")
        found, unknown, links = folder_assets(path)
        for link in links:
            self.stderr.write(f"warning: {link} is a symbolic link; skipped")
        for other in unknown:
            self.stderr.write(f"warning: {other} does not fit the storage layout; ignored")
        if not found:
            raise bad(f"{path} holds no assets (see the layout in --help).")
        return found

    def _import(self, item: AssetFile, *, set_preferred: bool) -> None:
        paper = paper_get(ref=item.paper_ref)
        if item.path is None:
            asset_register_remote(
                paper=paper, kind=item.kind, name=item.name, set_preferred=set_preferred
            )
        else:
            asset_save(
                paper=paper,
                kind=item.kind,
                name=item.name,
                content=item.path.read_bytes(),
                set_preferred=set_preferred,
            )

"""Which engines exist: the built-ins and the plugins in `<directory>/engines/*.py`.

Engines are discovered at start and again
on `refresh()` (also done by `list_search_engines(refresh=true)` and whenever an unknown
engine id is asked for, so a worker picks up a plugin dropped in after it started). A
plugin that fails to import, or defines an engine without an id, is reported in
`load_errors()` and skipped: one broken file never stops the others.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from core.errors import EngineUnavailable
from engines.base import BaseSearchEngine

logger = logging.getLogger(__name__)

LOCAL_ENGINE = "local"

# id -> "module:Class". Order is the order engines are listed and searched.
BUILTIN_ENGINES: dict[str, str] = {
    "arxiv": "engines.arxiv:ArxivEngine",
    "google_scholar": "engines.google_scholar:GoogleScholarEngine",
    "openalex": "engines.openalex:OpenAlexEngine",
    "crossref": "engines.crossref:CrossrefEngine",
    "semantic_scholar": "engines.semantic_scholar:SemanticScholarEngine",
    "pubmed": "engines.pubmed:PubMedEngine",
    "openreview": "engines.openreview:OpenReviewEngine",
    "dblp": "engines.dblp:DblpEngine",
    "europepmc": "engines.europepmc:EuropePmcEngine",
    "biorxiv": "engines.biorxiv:BiorxivEngine",
    "medrxiv": "engines.biorxiv:MedrxivEngine",
}
PLUGIN_MODULE_PREFIX = "research_mcp_engine_plugins."


@dataclass(frozen=True)
class LoadError:
    """An engine that could not be loaded, and why."""

    source: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"source": self.source, "message": self.message}


class EngineRegistry:
    """The loaded external engines of this process (thread-safe, loaded on first use)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._engines: dict[str, BaseSearchEngine] | None = None
        self._errors: list[LoadError] = []

    def engines(self) -> dict[str, BaseSearchEngine]:
        """Engine id -> engine, built-ins first, honouring ENGINES_ENABLED (read on every
        call, so a changed setting needs no reload; 'local' alone turns every external
        engine off)."""
        with self._lock:
            if self._engines is None:
                self._engines, self._errors = _discover()
            found = dict(self._engines)
        enabled = settings.ENGINES_ENABLED
        if enabled:
            found = {
                engine_id: engine for engine_id, engine in found.items() if engine_id in enabled
            }
        return found

    def load_errors(self) -> list[LoadError]:
        self.engines()
        return list(self._errors)

    def refresh(self) -> None:
        """Discover again (new, changed or removed plugin files)."""
        with self._lock:
            self._engines, self._errors = _discover()

    def get(self, engine_id: str) -> BaseSearchEngine:
        """The engine with this id; EngineUnavailable (listing the known ids) if none."""
        engine = self.engines().get(engine_id)
        if engine is None:
            self.refresh()
            engine = self.engines().get(engine_id)
        if engine is None:
            known = [LOCAL_ENGINE, *self.engines()]
            raise EngineUnavailable(
                f"Unknown or disabled search engine {engine_id!r}; engines: {', '.join(known)}.",
                engine=engine_id,
                available=known,
            )
        return engine


def _discover() -> tuple[dict[str, BaseSearchEngine], list[LoadError]]:
    found: dict[str, BaseSearchEngine] = {}
    errors: list[LoadError] = []
    for engine_id, target in BUILTIN_ENGINES.items():
        module_name, _, class_name = target.partition(":")
        try:
            engine_class = getattr(importlib.import_module(module_name), class_name)
            found[engine_id] = engine_class()
        except Exception as exc:  # a broken engine is reported, never fatal
            logger.exception("Built-in engine %s failed to load", engine_id)
            errors.append(LoadError(module_name, f"{type(exc).__name__}: {exc}"))
    for engine, error in _plugins(Path(settings.ENGINES_DIR)):
        if error:
            errors.append(error)
        elif engine is not None:
            if engine.id in found or engine.id == LOCAL_ENGINE:
                errors.append(
                    LoadError(
                        inspect.getfile(type(engine)),
                        f"Engine id {engine.id!r} is already taken; plugin skipped.",
                    )
                )
            else:
                found[engine.id] = engine
    return found, errors


def _plugins(
    directory: Path,
) -> list[tuple[BaseSearchEngine | None, LoadError | None]]:
    """Instances of every BaseSearchEngine subclass defined in directory/*.py."""
    results: list[tuple[BaseSearchEngine | None, LoadError | None]] = []
    if not directory.is_dir():
        return results
    for path in sorted(directory.glob("*.py")):
        if path.name.startswith("_"):
            continue
        module_name = PLUGIN_MODULE_PREFIX + path.stem
        try:
            spec = importlib.util.spec_from_file_location(module_name, path)
            if spec is None or spec.loader is None:
                raise ImportError("not a Python module")
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(module_name, None)
            logger.warning("Engine plugin %s failed to load: %s", path.name, exc)
            results.append((None, LoadError(path.name, f"{type(exc).__name__}: {exc}")))
            continue
        classes = [
            value
            for value in vars(module).values()
            if inspect.isclass(value)
            and issubclass(value, BaseSearchEngine)
            and value is not BaseSearchEngine
            and value.__module__ == module_name
        ]
        if not classes:
            results.append((None, LoadError(path.name, "defines no BaseSearchEngine subclass")))
        for engine_class in classes:
            if not getattr(engine_class, "id", "") or not getattr(engine_class, "name", ""):
                message = f"{engine_class.__name__} has no id or name"
                results.append((None, LoadError(path.name, message)))
                continue
            try:
                results.append((engine_class(), None))
            except Exception as exc:
                message = f"{engine_class.__name__}() failed: {type(exc).__name__}: {exc}"
                results.append((None, LoadError(path.name, message)))
    return results


registry = EngineRegistry()

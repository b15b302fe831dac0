"""Names from clients, checked before anything is built from them, and the storage layout.

Template names are lower-cased identifiers; language codes are BCP-47-like and put in
canonical case (`pt-BR`, `zh-Hans`). Only validated names reach a path or a URL, so `../`,
absolute paths and encoded separators never do.
"""

from __future__ import annotations

import re

from core.errors import InvalidInput
from papers.models import PaperAsset

Kind = PaperAsset.Kind

TEMPLATE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
LANGUAGE_PATTERN = r"^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8}){0,3}$"
_TEMPLATE_RE = re.compile(TEMPLATE_PATTERN)
_LANGUAGE_RE = re.compile(LANGUAGE_PATTERN)


def template_name_clean(value: str) -> str:
    """A template name as stored: lower case (one file per template on any file system).

    Raises InvalidInput for anything but letters, digits, '_', '-' and '.' (first character
    a letter or digit, at most 64 characters).
    """
    text = value if isinstance(value, str) else ""
    if not _TEMPLATE_RE.fullmatch(text):
        raise InvalidInput(
            "template must be 1-64 letters, digits, '_', '-' or '.', starting with a letter "
            "or digit (e.g. 'brief', 'deep_read').",
            field="template",
        )
    return text.lower()


def language_code_clean(value: str) -> str:
    """A BCP-47-like language code in canonical case: 'ZH-hans' -> 'zh-Hans', 'pt-br' ->
    'pt-BR'. Raises InvalidInput for anything else."""
    text = value if isinstance(value, str) else ""
    if not _LANGUAGE_RE.fullmatch(text):
        raise InvalidInput(
            "lang must be a language code such as 'zh', 'pt-BR' or 'zh-Hans'.", field="lang"
        )
    first, *rest = text.split("-")
    parts = [first.lower()]
    for part in rest:
        if len(part) == 2 and part.isalpha():
            parts.append(part.upper())  # region
        elif len(part) == 4 and part.isalpha():
            parts.append(part.title())  # script
        else:
            parts.append(part.lower())
    return "-".join(parts)


def name_clean(kind: str, name: str) -> str:
    if kind == Kind.SUMMARY:
        return template_name_clean(name)
    if kind == Kind.TRANSLATION:
        return language_code_clean(name)
    if kind == Kind.SOURCE:
        return ""
    raise InvalidInput("kind must be 'summary', 'source' or 'translation'.", field="kind")


def asset_relative_path(*, paper_id: int, kind: str, name: str = "") -> str:
    """The asset's place in the layout, relative to ASSETS_DIR and to ASSET_BASE_URL."""
    name = name_clean(kind, name)
    if kind == Kind.SUMMARY:
        return f"{int(paper_id)}/summary/{name}.json"
    if kind == Kind.TRANSLATION:
        return f"{int(paper_id)}/translation/{name}.md"
    return f"{int(paper_id)}/source.md"

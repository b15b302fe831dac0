"""Asset content on disk (under ASSETS_DIR) and its decoding."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from django.conf import settings

from core.errors import InvalidInput
from papers.assets.errors import (
    AssetFetchFailed,
    AssetParseFailed,
    Kind,
    asset_details,
    asset_label,
)

logger = logging.getLogger(__name__)


def local_path(relative: str) -> Path:
    """Where an asset's file lives under ASSETS_DIR (`relative` from asset_relative_path)."""
    root = Path(settings.ASSETS_DIR).resolve()
    path = (root / relative).resolve()
    # Names are validated already; this guards the invariant, not client input.
    if not path.is_relative_to(root):
        raise InvalidInput("Invalid asset name.")
    return path


def read_local(relative: str, *, paper_id: int, kind: str, name: str) -> bytes:
    """The file's bytes. Raises AssetFetchFailed (reason not_found / read_failed)."""
    path = local_path(relative)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        logger.warning("asset file missing: %s", path)
        reason, message = "not_found", "its file is missing from the knowledge base"
    except OSError as error:
        logger.warning("cannot read asset file %s: %s", path, error)
        reason, message = "read_failed", "its file cannot be read"
    raise AssetFetchFailed(
        f"Cannot read {asset_label(paper_id, kind, name)}: {message}.",
        reason=reason,
        **asset_details(paper_id, kind, name),
    )


def decode_text(data: bytes, *, paper_id: int, kind: str, name: str) -> str:
    """UTF-8 text (a BOM is dropped). Raises AssetParseFailed (reason not_utf8)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise AssetParseFailed(
            f"{asset_label(paper_id, kind, name).capitalize()} is not UTF-8 text.",
            reason="not_utf8",
            **asset_details(paper_id, kind, name),
        ) from None


def check_summary_json(text: str, *, paper_id: int, template: str) -> None:
    """Raises AssetParseFailed, with where the JSON breaks, for a summary that is not JSON."""
    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno} column {error.colno}"
        raise AssetParseFailed(
            f"The '{template}' summary of paper {paper_id} is not valid JSON "
            f"({error.msg} at {where}).",
            reason=f"invalid JSON: {error.msg} at {where}",
            **asset_details(paper_id, Kind.SUMMARY, template),
        ) from None

"""Fixtures shared by the tests of the papers app."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def exports_dir(settings: object, tmp_path: Path) -> Path:
    folder = tmp_path / "exports"
    settings.EXPORTS_DIR = folder  # type: ignore[attr-defined]
    return folder

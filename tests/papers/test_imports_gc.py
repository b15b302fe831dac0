"""papers/imports.py: a bulk import's garbage-collector settings are the process's own
again once the last import running in it ends, and a server's frozen start-up objects
(papers/search/warmup.py) stay frozen."""

from __future__ import annotations

import gc

import pytest

from papers import imports


@pytest.mark.parametrize("frozen_before", [False, True])
def test_collector_settings_are_restored_after_nested_bulk_imports(frozen_before: bool) -> None:
    frozen_by_the_run = gc.get_freeze_count() > 0
    gc.unfreeze()
    if frozen_before:
        gc.freeze()  # as a server's warm-up leaves it
    before = gc.get_threshold()
    try:
        with imports._bulk_garbage_collection():
            assert gc.get_threshold()[0] == imports.BULK_GC_THRESHOLD
            assert gc.get_freeze_count() > 0
            with imports._bulk_garbage_collection():  # another import, in another thread
                pass
            assert gc.get_threshold()[0] == imports.BULK_GC_THRESHOLD
        assert gc.get_threshold() == before
        # Its own freeze undone; a server's kept (less what was freed meanwhile).
        assert (gc.get_freeze_count() > 0) is frozen_before
    finally:  # the test process's collector as it was
        gc.unfreeze()
        if frozen_by_the_run:
            gc.freeze()

"""Progress bars for the long commands (imports, exports, reindexing), drawn the same way.

A bar is drawn on standard error only when it is a terminal (tqdm's `disable=None`): piped
or redirected output holds the commands' own lines and summary, no carriage returns. While
a bar runs, log records go through `tqdm.write`, above the bar, instead of being printed
through it (tqdm's logging_redirect_tqdm keeps the handlers' formatters and filters, so
secrets stay redacted).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm


@contextmanager
def progress_bar(
    iterable: Iterable[Any] | None = None,
    *,
    desc: str,
    unit: str,
    total: int | None = None,
    hidden: bool = False,
) -> Iterator[tqdm]:
    """A bar counting `unit`s (update it, or iterate it when given an iterable); `hidden`
    (a command's --no-progress) never draws it."""
    with (
        logging_redirect_tqdm(),
        tqdm(
            iterable,
            desc=desc,
            unit=unit,
            total=total,
            file=sys.stderr,
            disable=True if hidden else None,
            mininterval=0.5,
            dynamic_ncols=True,
        ) as bar,
    ):
        yield bar

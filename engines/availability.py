"""Which engines recent calls say cannot answer now, read from their circuit breakers
(engines/breaker.py): no network call and no probe, so a planner or a search can leave
them out before it starts."""

from __future__ import annotations

from collections.abc import Iterable

from engines import breaker
from engines.registry import registry


def engines_known_down(engine_ids: Iterable[str] | None = None) -> dict[str, str]:
    """The engines among `engine_ids` (None: every loaded engine) whose breaker is open,
    each with why (the failure that opened it, and when it is asked again). Ids of no
    loaded engine (`local`, unknown ones) are never down."""
    loaded = registry.engines()
    wanted = list(loaded) if engine_ids is None else [e for e in engine_ids if e in loaded]
    down: dict[str, str] = {}
    for engine_id in wanted:
        state = breaker.state(engine_id)
        if state.open:
            message = str((state.failure or {}).get("message") or "failing").rstrip(".")
            down[engine_id] = f"{message}; not asked again for {state.retry_in:.0f} s"
    return down

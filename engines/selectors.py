"""What the engines are and how they are doing (`list_search_engines`,
`engines://list`, `get_search_engine_categories`): availability from the key settings,
the circuit breakers and a connectivity probe."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from engines import breaker, cache, ratelimit
from engines.base import BaseSearchEngine
from engines.probe import probe_reasons
from engines.registry import LOCAL_ENGINE, registry
from engines.runner import EngineCall, run_calls

LOCAL_DESCRIPTION = {
    "id": LOCAL_ENGINE,
    "name": "Local library",
    "description": (
        "The papers already in this library: ranked full text over titles, abstracts, "
        "authors, keywords and venues, with filters; no API key, always available."
    ),
    "type": "local",
    "is_available": True,
    "operations": ["get_citing_papers", "search", "search_by_author"],
}


def in_default(engine: BaseSearchEngine) -> bool:
    """Whether a search that names no engines asks this one: ENGINES_DEFAULT when set,
    else the engine's own `in_default_search`."""
    chosen = settings.ENGINES_DEFAULT
    return engine.id in chosen if chosen else engine.in_default_search


def engines_list(*, refresh: bool = False, probe: bool = True) -> dict[str, Any]:
    """Every engine with availability (and why not), its `status` in words
    (`engine_status`, what the home page shows too), operations, breaker, rate-limit state
    and cache hit rate; plus plugin load errors.

    `is_available` is false, with `unavailable_reason`, when the engine cannot be used
    (no key), its breaker is open (with the failure that opened it and when the next try
    comes), its key was rejected or its quota ran out (until when, if the source said),
    or, with `probe`, a connection to its source cannot be opened (engines/probe.py: no
    request is sent; answers are kept a minute) or the source refuses the key or account
    (`key_check`: SerpApi's free account endpoint, answers kept ten minutes). An engine a
    search asks only when named (`in_default`) says `in_default_search: false`."""
    if refresh:
        registry.refresh()
    found = registry.engines()
    reasons = {engine.id: engine.unavailable_reason() for engine in found.values()}
    health = {engine.id: breaker.state(engine.id) for engine in found.values()}
    for engine_id, state in health.items():
        if not reasons[engine_id]:
            reasons[engine_id] = _health_reason(state)
    if probe:
        unprobed = {
            engine.id: engine.probe_url() for engine in found.values() if not reasons[engine.id]
        }
        for engine_id, reason in probe_reasons(unprobed).items():
            reasons[engine_id] = reason
        for engine in found.values():
            if not reasons[engine.id]:
                reasons[engine.id] = engine.key_check()
    engines = [{**LOCAL_DESCRIPTION, "status": "available"}]
    for engine in found.values():
        reason = reasons[engine.id]
        status = engine_status(
            not_configured=engine.unavailable_reason(),
            state=health[engine.id],
            unreachable="" if reason == _health_reason(health[engine.id]) else reason,
        )
        engines.append(
            {
                **engine.describe(),
                "is_available": not reason,
                **({"unavailable_reason": reason} if reason else {}),
                "status": status,
                **({} if in_default(engine) else {"in_default_search": False}),
                "breaker": health[engine.id].as_dict(),
                "rate_limit": ratelimit.state(engine).as_dict(),
                "cache": {"ttl_seconds": cache.ttl_for(engine), **cache.stats(engine.id)},
            }
        )
    return {
        "engines": engines,
        "load_errors": [error.as_dict() for error in registry.load_errors()],
    }


def engine_choices(*, operation: str) -> list[tuple[str, str]]:
    """(id, name) of the library and every loaded engine that supports `operation`, in the
    registry's order: what a form offers to tick (the saved-search admin)."""
    external = [
        (engine.id, engine.name)
        for engine in registry.engines().values()
        if operation in engine.operations
    ]
    return [(LOCAL_ENGINE, str(LOCAL_DESCRIPTION["name"])), *external]


def engines_known_down(engine_ids: Iterable[str] | None = None) -> dict[str, str]:
    """The engines that recent calls say cannot answer now, each with why: breaker open,
    key refused, quota used up (`_health_reason`). Read from the shared breaker state only:
    no network, no probe, so a search can skip them before it starts. `engine_ids` None:
    every loaded engine; ids of no loaded engine (`local`, unknown ones) are never down.
    An engine that cannot be used at all (no key) is `is_available()` false, not listed."""
    found = registry.engines()
    wanted = list(found) if engine_ids is None else [e for e in engine_ids if e in found]
    down: dict[str, str] = {}
    for engine_id in wanted:
        reason = _health_reason(breaker.state(engine_id))
        if reason:
            down[engine_id] = reason
    return down


def engine_status(
    *, not_configured: str, state: breaker.BreakerState, unreachable: str = ""
) -> str:
    """An engine's state in a researcher's words, from its configuration (`not_configured`:
    why it cannot be used at all, e.g. no key) and its circuit breaker's real state: the one
    description `list_search_engines` and the home page both give.

    "available" only when the engine is configured and its breaker closed (with the last
    failed call, if one is remembered below the breaker's threshold); otherwise
    "not configured: …", "failing since <when> (<why>); next try in N s" (breaker open),
    "failing since <when> (<why>); being tried again" (half-open), "key refused: …",
    "cooling down: …" (quota or rate limit, until when if the source said) or, with a
    probe's answer, "unreachable: …"."""
    if not_configured:
        return f"not configured: {not_configured}"
    failure = state.failure or {}
    message = " ".join(str(failure.get("message") or "").split()).rstrip(".")
    why = f" ({message})" if message else ""
    if state.state != "closed":
        since = _when(state.opened_at) if state.opened_at else _when_iso(failure.get("at"))
        since_text = f" since {since}" if since else ""
        if state.open:
            return f"failing{since_text}{why}; next try in {state.retry_in:.0f} s"
        return f"failing{since_text}{why}; being tried again"
    outcome = failure.get("outcome")
    if outcome == "bad_key":
        return f"key refused: {message or 'the source rejected the key'}"
    until = failure.get("until")
    if outcome == "rate_limited" and until and until > _now_iso():
        return (
            f"cooling down: {message or 'rate limited'}; quota exhausted until {until[11:16]} UTC"
        )
    if outcome == "rate_limited" and failure.get("reason") == "quota_exhausted":
        return f"cooling down: {message or 'quota exhausted'}"
    if unreachable:
        return f"unreachable: {unreachable}"
    if failure and message:
        return f"available (a call failed at {_when_iso(failure.get('at'))}: {message})"
    return "available"


def _when(moment: datetime) -> str:
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def _when_iso(value: object) -> str:
    try:
        return _when(datetime.fromisoformat(str(value)))
    except ValueError:
        return ""


def _health_reason(state: breaker.BreakerState) -> str:
    """Why recent calls say the engine cannot be used now; empty when nothing does."""
    failure = state.failure or {}
    message = str(failure.get("message") or "").rstrip(".")
    if state.open:
        return f"{message or 'failing'}; not asked again for {state.retry_in:.0f} s"
    if failure.get("outcome") == "bad_key":
        return message
    until = failure.get("until")
    if failure.get("outcome") == "rate_limited" and until and until > _now_iso():
        return f"{message}; quota exhausted until {until[11:16]} UTC"
    if failure.get("outcome") == "rate_limited" and failure.get("reason") == "quota_exhausted":
        return message
    return ""


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def engines_markdown() -> str:
    """`engines://list`: the same as a markdown table."""
    listing = engines_list()
    lines = [
        "| id | name | type | available | operations | rate limit | cache hit rate |",
        "|---|---|---|---|---|---|---|",
    ]
    for engine in listing["engines"]:
        available = "yes" if engine["is_available"] else f"no: {engine['unavailable_reason']}"
        rate = engine.get("rate_limit", {}).get("limit", "-")
        hit_rate = engine.get("cache", {}).get("hit_rate")
        lines.append(
            f"| {engine['id']} | {engine['name']} | {engine['type']} | {available} | "
            f"{', '.join(engine['operations'])} | {rate} | "
            f"{'-' if hit_rate is None else f'{hit_rate:.0%}'} |"
        )
    for error in listing["load_errors"]:
        lines.append(f"\nPlugin not loaded: {error['source']}: {error['message']}")
    return "# Search engines\n\n" + "\n".join(lines) + "\n"


def engines_categories(*, engine_ids: list[str]) -> dict[str, Any]:
    """Categories per engine (cached like any engine answer); engines without categories
    say so in their status."""
    external = [engine_id for engine_id in engine_ids if engine_id != LOCAL_ENGINE]
    outcomes = run_calls([EngineCall.categories(engine_id) for engine_id in external])
    result: dict[str, Any] = {}
    if LOCAL_ENGINE in engine_ids:
        result[LOCAL_ENGINE] = {
            "status": "ok",
            "note": "The library's own categories: list_top_facets(category='category').",
            "categories": [],
        }
    for outcome in outcomes:
        entry: dict[str, Any] = outcome.summary()
        categories = outcome.result if outcome.ok else []
        groups: dict[str, list[dict[str, str]]] = {}
        for category in categories or []:
            groups.setdefault(category.get("group") or "", []).append(
                {"id": category["id"], "name": category["name"]}
            )
        entry["categories"] = groups
        entry["count"] = len(categories or [])
        result[outcome.engine] = entry
    return result

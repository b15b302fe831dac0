"""The throttle of failed sign-ins and token guesses lives in `core.throttle` (/mcp uses it
too, and mcp_endpoint may not import research_site: docs/LAYERS.md); the admin's sign-in
form and the REST API's bearer authentication import it from here."""

from core.throttle import (
    CACHE_ALIAS,
    Throttled,
    address_key,
    check,
    clear,
    client_address,
    client_key,
    record_failure,
    user_key,
)

__all__ = [
    "CACHE_ALIAS",
    "Throttled",
    "address_key",
    "check",
    "clear",
    "client_address",
    "client_key",
    "record_failure",
    "user_key",
]

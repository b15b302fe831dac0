"""Who a decision is recorded as (issue 39 item 4): the person behind a request and the
agent client that acted for them, read from `core.identity`'s principal.

A client proved by a credential of its own person (a REST API token, an OAuth access
token) is a *named* principal: its decisions are that person's, whatever name the client
gives. A screener or extractor label then starts with `user:<username>`; a client that
names itself (`screener="claude"`) is `user:<username>+agent:claude`, so one person's two
agents are still two screeners, and two people are never one. The label the client would
use by default (`agent`) adds nothing: `user:alice`.

Everything else keeps the name the caller gives, as before: the local owner (loopback,
stdio), the shared `MCP_AUTH_TOKEN`, the admin (`admin:<username>`, its own label) and
code outside a request. The user and client are recorded beside the label in every case
(`attribution()`), so the admin can show who decided what even then.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.identity import current_principal

# Principals whose credential belongs to one person (their decisions carry their name).
NAMED_KINDS = frozenset({"api-token", "oauth"})
USER_PREFIX = "user:"
AGENT_PREFIX = "agent:"
DEFAULT_AGENT = "agent"


@dataclass(frozen=True)
class Attribution:
    """The person (a Django user or None) and the client (`api token "laptop"`, an OAuth
    client's name, `local-owner`; "" outside a request) a write is made by."""

    user: Any = None
    client: str = ""
    named: bool = False

    @property
    def username(self) -> str:
        return self.user.get_username() if self.user is not None else ""


def attribution() -> Attribution:
    principal = current_principal()
    if principal is None:
        return Attribution()
    user = principal.user
    if user is not None and not getattr(user, "is_authenticated", False):
        user = None
    named = principal.kind in NAMED_KINDS and user is not None
    return Attribution(user=user, client=principal.client or principal.kind, named=named)


def actor_label(given: str | None, who: Attribution | None = None) -> str:
    """The screener label of a call that names itself `given` (None or "agent": the
    client's default). A named principal's label is theirs (`user:alice`,
    `user:alice+agent:claude`); otherwise `given` (or "agent") unchanged."""
    who = attribution() if who is None else who
    name = " ".join(str(given or "").split())
    if not who.named:
        return name or DEFAULT_AGENT
    label = f"{USER_PREFIX}{who.username}"
    if name and name != DEFAULT_AGENT and name != label:
        label += f"+{AGENT_PREFIX}{name}"
    return label

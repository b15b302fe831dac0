"""Who a decision is recorded as (core/attribution.py, docs/AUTH.md "Attribution and the
audit log"): a person's own token names them, whatever their client calls itself; other
principals keep the caller's label."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from core.attribution import actor_label, attribution
from core.errors import InvalidInput
from core.identity import Principal, acting_as, local_owner_principal
from projects.review.extraction.services import extractor_resolve


@pytest.fixture
def alice(db: None) -> User:
    return User.objects.create_user("alice")


def test_a_token_names_its_person(alice: User) -> None:
    principal = Principal.for_user(alice, "api-token", client="API token laptop (rmcp_ab…)")
    with acting_as(principal):
        who = attribution()
        assert (who.user, who.client, who.named) == (alice, principal.client, True)
        assert actor_label(None) == actor_label("agent") == "user:alice"
        assert actor_label("claude") == "user:alice+agent:claude"
        assert actor_label("user:bob") == "user:alice+agent:user:bob"  # never Bob
        extractor = extractor_resolve(agent="agent")
        assert (extractor.label, extractor.user, extractor.client) == (
            "user:alice",
            alice,
            principal.client,
        )
        assert extractor_resolve(agent="gpt").label == "user:alice+agent:gpt"
    oauth = Principal.for_user(alice, "oauth", client="OAuth client Claude")
    with acting_as(oauth):
        assert actor_label("agent") == "user:alice"


def test_the_owner_the_admin_and_the_system_keep_their_labels(alice: User) -> None:
    User.objects.create_superuser("admin", "a@example.org", "pw")
    with acting_as(local_owner_principal()):
        who = attribution()
        assert who.named is False and who.user.username == "admin"
        assert who.client == "local-owner"
        assert actor_label("agent") == "agent" and actor_label("ann") == "ann"
        assert extractor_resolve(agent="agent").label == "agent:agent"
    with acting_as(Principal.for_user(alice, "session", client="site")):
        assert actor_label("admin:alice") == "admin:alice"
    assert attribution().user is None and actor_label(None) == "agent"
    with pytest.raises(InvalidInput):
        extractor_resolve()

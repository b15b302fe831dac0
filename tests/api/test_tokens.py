"""API tokens: stored as hashes, created through `manage.py api_token` or the admin with the
secret shown once, listed without secrets, revoked; the Readers group exists."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.test import Client

from core.errors import Conflict, InvalidInput, NotFound
from research_site.models import ApiToken
from research_site.tokens import (
    READERS_GROUP,
    api_token_create,
    api_token_get,
    api_token_revoke,
)
from tests.api.conftest import Api

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("api_token", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_readers_group_is_created_by_a_migration() -> None:
    assert Group.objects.filter(name=READERS_GROUP).exists()


def test_only_the_hash_and_a_short_prefix_are_stored(writer: User) -> None:
    token, secret = api_token_create(user=writer, name="laptop")
    assert secret.startswith("rmcp_") and len(secret) > 40
    stored = ApiToken.objects.get(pk=token.pk)
    assert stored.key_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert stored.prefix == secret[:12]
    assert stored.scope == "read"  # the safe default
    row = ApiToken.objects.filter(pk=token.pk).values().get()
    assert not any(secret in str(value) for value in row.values())


def test_token_names_are_unique_per_user_among_live_tokens(writer: User) -> None:
    api_token_create(user=writer, name="ci")
    with pytest.raises(Conflict):
        api_token_create(user=writer, name="ci")
    api_token_revoke(token=ApiToken.objects.get(name="ci"))
    api_token_create(user=writer, name="ci")  # a revoked token's name is free again
    with pytest.raises(InvalidInput) as nameless:
        api_token_create(user=writer, name="  ")
    assert nameless.value.details == {"field": "name"}
    assert "A token needs a name" in nameless.value.message
    with pytest.raises(InvalidInput):
        api_token_create(user=writer, name="x", scope="admin")


def test_a_prefix_that_names_two_tokens_is_refused_and_the_id_still_works(writer: User) -> None:
    # Prefixes are random, so two tokens sharing one is rare, but then neither may be picked.
    first, _ = api_token_create(user=writer, name="one")
    second, _ = api_token_create(user=writer, name="two")
    ApiToken.objects.filter(pk=second.pk).update(prefix=first.prefix)
    with pytest.raises(InvalidInput) as ambiguous:
        api_token_get(ref=first.prefix)
    assert ambiguous.value.details == {"field": "token"}
    assert "names several tokens; use the id" in ambiguous.value.message
    assert api_token_get(ref=second.pk) == second
    assert api_token_get(ref=f" {first.pk} ") == first
    with pytest.raises(NotFound):
        api_token_get(ref="rmcp_nothing")


def test_command_create_prints_only_the_secret_on_stdout(api: Api, writer: User) -> None:
    out, err = run("create", "--user", "writer", "--name", "script", "--scope", "write")
    secret = out.strip()
    assert "not shown again" in err and secret not in err
    assert api.post("/api/projects", {"name": "From a script"}, token=secret).status_code == 201


def test_command_create_with_expiry_and_bad_input(writer: User) -> None:
    run("create", "--user", "writer", "--name", "temp", "--expires-days", "30")
    assert ApiToken.objects.get(name="temp").expires_at is not None
    with pytest.raises(CommandError, match="No user"):
        run("create", "--user", "ghost", "--name", "x")
    with pytest.raises(CommandError, match="already has a token"):
        run("create", "--user", "writer", "--name", "temp")
    with pytest.raises(CommandError, match="at least 1"):
        run("create", "--user", "writer", "--name", "y", "--expires-days", "0")


def test_command_list_shows_prefixes_never_secrets(writer: User) -> None:
    _, secret = api_token_create(user=writer, name="laptop", scope="write")
    _, old = api_token_create(user=writer, name="old")
    api_token_revoke(token=old[:12])
    out, _ = run("list")
    assert secret[:12] in out and "laptop" in out and "write" in out
    assert secret not in out and old[:12] not in out
    everything, _ = run("list", "--all", "--user", "writer")
    assert old[:12] in everything and "revoked" in everything
    assert run("list", "--user", "nobody")[0].count("\n") == 1  # the header only


def test_command_revoke_by_prefix_or_id(api: Api, writer: User) -> None:
    token, secret = api_token_create(user=writer, name="laptop")
    out, _ = run("revoke", secret[:12])
    assert "Revoked" in out
    assert api.get("/api/projects", token=secret).status_code == 401
    run("revoke", str(token.pk))  # again: nothing changes, no error
    with pytest.raises(CommandError, match="No API token"):
        run("revoke", "rmcp_missing")
    with pytest.raises(NotFound):
        api_token_revoke(token="424242")


def test_admin_shows_the_new_secret_once_and_revokes(
    make_user: Callable[..., User], writer: User
) -> None:
    User.objects.create_superuser("boss", password="pw-boss")
    browser = Client()
    assert browser.login(username="boss", password="pw-boss")
    page = browser.post(
        "/admin/research_site/apitoken/add/",
        {"user": writer.pk, "name": "from-admin", "scope": "write", "expires_at_0": "",
         "expires_at_1": ""},
    )  # fmt: skip
    assert page.status_code == 200, page.content[:500]
    assert "no-store" in page["Cache-Control"]
    html = page.content.decode()
    secret = html.split('id="api-token-secret"')[1].split(">")[1].split("<")[0]
    token = ApiToken.objects.get(name="from-admin")
    assert token.key_hash == hashlib.sha256(secret.encode()).hexdigest()
    detail = browser.get(f"/admin/research_site/apitoken/{token.pk}/change/").content.decode()
    assert token.prefix in detail and secret not in detail
    assert secret not in browser.get("/admin/research_site/apitoken/").content.decode()
    browser.post(
        "/admin/research_site/apitoken/",
        {"action": "revoke_selected", "_selected_action": [token.pk]},
    )
    assert ApiToken.objects.get(pk=token.pk).status == "revoked"


def test_admin_refuses_a_duplicate_name_and_a_past_expiry(writer: User) -> None:
    api_token_create(user=writer, name="taken")
    User.objects.create_superuser("boss", password="pw-boss")
    browser = Client()
    browser.login(username="boss", password="pw-boss")
    fields = {"user": writer.pk, "scope": "read", "expires_at_0": "", "expires_at_1": ""}
    duplicate = browser.post("/admin/research_site/apitoken/add/", {**fields, "name": "taken"})
    assert b"already has a live token with this name" in duplicate.content
    past = browser.post(
        "/admin/research_site/apitoken/add/",
        {**fields, "name": "new", "expires_at_0": "2001-01-01", "expires_at_1": "00:00:00"},
    )
    assert b"The expiry date is in the past" in past.content
    assert ApiToken.objects.count() == 1

"""Every page the site serves carries the Content-Security-Policy and the related headers
(research_site/security_headers.py): the home page, the admin, the REST docs, static
files, error pages. Chromium's view of the policy: tests/browser/test_content_security_policy.py."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from research_site.security_headers import POLICY

pytestmark = pytest.mark.django_db

EXPECTED = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/", None),
        ("/admin/login/", 200),
        ("/admin/", 302),
        ("/admin/papers/paper/", 302),
        ("/api/docs", 200),
        ("/api/openapi.json", 200),
        ("/no/such/page", 404),
        ("/feeds/saved/nothing.atom", 404),
    ],
)
def test_every_page_has_the_policy_and_related_headers(
    client: Client, path: str, status: int | None
) -> None:
    response = client.get(path)
    if status is not None:
        assert response.status_code == status
    assert {name: response.get(name) for name in EXPECTED} == EXPECTED


def test_the_policy_runs_no_inline_script_and_nothing_from_elsewhere() -> None:
    directives = dict(part.strip().split(" ", 1) for part in POLICY.split(";"))
    assert directives["script-src"] == "'self'"
    assert directives["default-src"] == "'self'"
    assert directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] == "'none'"
    assert "unsafe" not in directives["script-src"] + directives.get("worker-src", "")


def test_a_signed_in_reading_page_has_the_policy(admin_client: Any, make_paper: Any) -> None:
    paper = make_paper(title="A Paper To Read")
    response = admin_client.get(f"/admin/papers/paper/{paper.pk}/read/")
    assert response.status_code == 200
    assert response["Content-Security-Policy"] == POLICY

"""Fixtures for the REST API tests: users, tokens, a small library and a client that sends
a bearer token, all through the real services, URLs, middleware and database."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from papers import assets
from papers.models import Paper
from papers.search import semantic
from projects.models import Project
from projects.services import project_add_papers
from research_site.models import ApiToken
from research_site.tokens import READERS_GROUP, api_token_create


@dataclass
class Api:
    """The Django test client speaking JSON with `Authorization: Bearer <token>`."""

    client: Client
    token: str | None = None

    def _headers(self, token: str | None) -> dict[str, str]:
        secret = self.token if token is None else token
        return {"Authorization": f"Bearer {secret}"} if secret else {}

    def get(self, path: str, params: dict[str, Any] | None = None, token: str | None = None) -> Any:
        return self.client.get(path, params or {}, headers=self._headers(token))

    def send(self, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
        call = getattr(self.client, method.lower())
        data = json.dumps(body) if body is not None else ""
        return call(path, data, content_type="application/json", headers=self._headers(token))

    def post(self, path: str, body: Any = None, token: str | None = None) -> Any:
        return self.send("POST", path, body, token)

    def put(self, path: str, body: Any = None, token: str | None = None) -> Any:
        return self.send("PUT", path, body, token)

    def delete(self, path: str, token: str | None = None) -> Any:
        return self.send("DELETE", path, None, token)


def error(response: Any, status: int) -> dict[str, Any]:
    """The `error` object of a JSON error answer with this status."""
    assert response.status_code == status, (response.status_code, response.content[:500])
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] and body["error"]["message"]
    return dict(body["error"])


@pytest.fixture
def make_user(db: None) -> Callable[..., User]:
    def make(username: str, *, reader: bool = False, **fields: Any) -> User:
        user = User.objects.create_user(username=username, password="pw-" + username, **fields)
        if reader:
            user.groups.add(Group.objects.get(name=READERS_GROUP))
        return user

    return make


@pytest.fixture
def make_token(db: None) -> Callable[..., str]:
    def make(user: User, scope: str = ApiToken.Scope.WRITE, name: str = "", **fields: Any) -> str:
        _, secret = api_token_create(
            user=user, name=name or f"{scope}-token", scope=scope, **fields
        )
        return secret

    return make


@pytest.fixture
def writer(make_user: Callable[..., User]) -> User:
    return make_user("writer")


@pytest.fixture
def write_token(writer: User, make_token: Callable[..., str]) -> str:
    return make_token(writer, ApiToken.Scope.WRITE)


@pytest.fixture
def read_token(writer: User, make_token: Callable[..., str]) -> str:
    return make_token(writer, ApiToken.Scope.READ)


@pytest.fixture
def api(client: Client, write_token: str) -> Api:
    """Authenticated with a write token by default; pass token= to use another one."""
    return Api(client, write_token)


@pytest.fixture
def anonymous(client: Client) -> Api:
    return Api(client)


@pytest.fixture(autouse=True)
def private_folders(settings: Any, tmp_path: Any) -> None:
    """Assets and exports of each test in its own folder (RESEARCH_DIRECTORY stays)."""
    settings.ASSETS_DIR = tmp_path / "assets"
    settings.EXPORTS_DIR = settings.RESEARCH_DIRECTORY / "exports" / tmp_path.name


@pytest.fixture(autouse=True)
def fresh_vector_index() -> Iterator[None]:
    """The vector index lives in the process; each test's database is rolled back."""
    semantic.vector_index().reset()
    semantic._lazy_checked_at = -math.inf
    yield
    semantic.vector_index().reset()


@dataclass
class Library:
    attention: Paper
    bert: Paper
    resnet: Paper
    project: Project


BRIEF = {"tldr": "Attention replaces recurrence.", "findings": ["BLEU 28.4 on WMT14 en-de"]}
SOURCE = "# Attention Is All You Need\n\n" + "The dominant sequence transduction models. " * 50


@pytest.fixture
def library(make_paper: Callable[..., Paper], make_project: Callable[..., Project]) -> Library:
    attention = make_paper(
        "Attention Is All You Need",
        abstract="The Transformer, based solely on attention mechanisms, dispenses with "
        "recurrence and convolutions entirely.",
        venue="Advances in Neural Information Processing Systems",
        doi="10.5555/3295222.3295349",
        keywords=["transformers", "attention"],
        source="arxiv",
    )
    bert = make_paper(
        "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding",
        authors=["Jacob Devlin", "Ming-Wei Chang"],
        year=2019,
        abstract="We introduce BERT, a language representation model pre-trained on text.",
        venue="NAACL",
        keywords=["transformers", "pretraining"],
        categories=["cs.CL"],
        source="acl",
    )
    resnet = make_paper(
        "Deep Residual Learning for Image Recognition",
        authors=["Kaiming He"],
        year=2016,
        abstract="Residual networks ease the training of very deep convolutional networks.",
        venue="CVPR",
        source="cvf",
    )
    project = make_project("Transformers", "Attention-based models.")
    project_add_papers(project=project, paper_ids=[attention.pk, bert.pk])
    assets.asset_save(paper=attention, kind="summary", name="brief", content=json.dumps(BRIEF))
    assets.asset_save(paper=attention, kind="source", content=SOURCE)
    assets.asset_save(paper=attention, kind="translation", name="de", content="# Aufmerksamkeit")
    semantic.embed_papers([attention.pk, bert.pk, resnet.pk])
    return Library(attention, bert, resnet, project)

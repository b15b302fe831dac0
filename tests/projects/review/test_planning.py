"""projects/review/planning.py: which engines a review's plan proposes."""

from __future__ import annotations

from projects.review.planning import plan_propose

ALLOWED = ["local", "arxiv", "openalex", "crossref", "pubmed", "europepmc", "openreview"]
DEFAULT = ["local", "arxiv", "openalex", "crossref"]  # what a search naming none asks


def engines(domain: str, default: list[str]) -> list[str]:
    plan = plan_propose(
        question="Does exercise lower blood pressure in adults?", domain=domain,
        engines_allowed=ALLOWED, engines_default=default,
    )  # fmt: skip
    return plan.engines


def test_a_domain_proposes_its_own_sources_first() -> None:
    assert engines("biomed", DEFAULT) == ["local", "pubmed", "europepmc", "openalex", "crossref"]


def test_another_fields_sources_are_left_out_unless_the_domain_names_them() -> None:
    proposed = engines("physics", DEFAULT)
    assert proposed == ["local", "arxiv", "openalex", "crossref"]
    assert "pubmed" not in engines("social", DEFAULT)
    assert "openreview" in engines("cs", DEFAULT)  # cs names it


def test_a_review_without_a_kept_default_set_may_use_every_allowed_engine() -> None:
    # started before the default set was kept: every allowed engine is a candidate
    assert "pubmed" in engines("physics", [])

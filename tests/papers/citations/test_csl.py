"""papers/citations/csl.py: locators written '<paper>:<page>', as REST /api/papers/cite
takes them."""

from __future__ import annotations

import pytest

from core.errors import InvalidInput
from papers.citations.csl import locators_parse


def test_a_locator_is_split_at_its_last_colon() -> None:
    parsed = locators_parse(["vaswani2017attention:5", " doi:10.1/x : 3-4 "])
    assert parsed == {"vaswani2017attention": "5", "doi:10.1/x": "3-4"}


@pytest.mark.parametrize("bad", [["no-page"], [":5"], ["paper:"], ["a:1", "a:2"]])
def test_a_locator_not_of_that_form_is_refused(bad: list[str]) -> None:
    with pytest.raises(InvalidInput) as refused:
        locators_parse(bad)
    assert refused.value.details["field"] == "locators"

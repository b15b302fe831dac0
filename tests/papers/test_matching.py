"""papers.matching: when two descriptions sharing a title are one paper."""

from __future__ import annotations

import pytest

from papers.matching import Description as D
from papers.matching import abstracts_agree, same_paper_by_title

CREEP = "the creep of a slightly crooked column carrying a constant load is studied theoretically"
RINGS = "a general variational theory of elastic stability is applied to the buckling of rings"


@pytest.mark.parametrize(
    ("incoming", "known", "same"),
    [
        # enough evidence: one thing agrees, nothing disagrees
        (D(first_author="cho"), D(first_author="cho"), True),
        (D(year=2014), D(year=2014), True),
        (D(venue="cranfield"), D(venue="cranfield"), True),
        (D(abstract=CREEP), D(abstract=CREEP + " again"), True),
        (D(source="x", source_id="1"), D(source="x", source_id="1"), True),
        # a year apart: only with the same first author
        (D(first_author="cho", year=2015), D(first_author="cho", year=2014), True),
        (D(year=2015, venue="v"), D(year=2014, venue="v"), False),
        (D(first_author="cho", year=2016), D(first_author="cho", year=2014), False),
        # a year missing on one side: the same first author is needed, and abstracts decide
        (D(first_author="cho", year=2014), D(first_author="cho"), True),
        (D(year=2014), D(), False),
        (
            D(first_author="cho", year=2014, abstract=CREEP),
            D(first_author="cho", abstract=RINGS),
            False,
        ),
        # title, first author and year agree: engines' snippets of other parts of the
        # abstract do not split one paper in two
        (
            D(first_author="cho", year=2014, abstract=CREEP),
            D(first_author="cho", year=2014, abstract=RINGS),
            True,
        ),
        # the title alone is not enough
        (D(), D(), False),
        (D(source="x", source_id="1"), D(source="x", source_id="2"), False),
        # evidence against outweighs any agreement
        (D(venue="cranfield", abstract=CREEP), D(venue="cranfield", abstract=RINGS), False),
        (D(first_author="cho", year=2014), D(first_author="lee", year=2014), False),
        (D(year=2018, venue="a"), D(year=2018, venue="b"), False),
        (D(year=2018, doi="10.1/a"), D(year=2018, doi="10.1/b"), False),
        (D(year=2018, arxiv_id="1"), D(year=2018, arxiv_id="2"), False),
    ],
)
def test_same_paper_by_title(incoming: D, known: D, same: bool) -> None:
    assert same_paper_by_title(incoming, known) is same
    assert same_paper_by_title(known, incoming) is same


def test_abstracts_agree_is_unknown_when_one_is_missing() -> None:
    assert abstracts_agree(CREEP, "") is None
    assert abstracts_agree(CREEP, RINGS) is False

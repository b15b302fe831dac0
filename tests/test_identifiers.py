"""Human ids, citekeys and identifier normalisation."""

from __future__ import annotations

import pytest

from papers.identifiers import (
    citekey_base,
    human_id_base,
    initials,
    normalize_arxiv_id,
    normalize_doi,
    parse_person_name,
)


def test_human_id_lists_two_authors_without_ampersand() -> None:
    assert human_id_base(["John Smith", "Alice Johnson"], 2024) == "Smith, J., Johnson, A. 2024"


def test_human_id_matches_seed_example_with_five_authors_and_accents() -> None:
    names = [
        "Marc Alier",
        "Juanan Pereira",
        "Francisco José García-Peñalvo",
        "Maria José Casañ",
        "Jose Cabré",
    ]
    assert (
        human_id_base(names, 2025)
        == "Alier, M., Pereira, J., Garcia-Penalvo, F. J., Casan, M. J., & Cabre, J. 2025"
    )


def test_human_id_without_authors_or_year_is_still_readable() -> None:
    assert human_id_base([], 2020) == "Anonymous 2020"
    assert human_id_base(["Ada Lovelace"], None) == "Lovelace, A. n.d."


def test_human_id_of_long_author_list_ends_in_et_al() -> None:
    names = [f"Author{i} Person" for i in range(8)]
    assert human_id_base(names, 2021).endswith("Person, A., et al. 2021")


def test_person_names_in_both_orders_and_with_particles() -> None:
    assert parse_person_name("Vaswani, Ashish") == parse_person_name("Ashish Vaswani")
    assert parse_person_name("Ludwig van Beethoven").family == "van Beethoven"
    assert parse_person_name("Smith, Jr., John").family == "Smith Jr."
    assert initials("Jean-Pierre") == "J.-P."
    assert initials("F.J.") == "F. J."


def test_citekey_is_better_bibtex_style() -> None:
    assert citekey_base(["Ashish Vaswani"], 2017, "Attention Is All You Need") == (
        "vaswani2017attention"
    )
    assert citekey_base(["Óscar Núñez-López"], 2020, "The Art of Search") == "nunezlopez2020art"
    assert citekey_base([], None, "On Things") == "anonthings"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("10.18653/v1/D18-1057", "10.18653/v1/d18-1057"),
        ("https://doi.org/10.1000/ABC", "10.1000/abc"),
        ("doi: 10.1000/xyz.", "10.1000/xyz"),
        ("not a doi", None),
        ("", None),
    ],
)
def test_doi_normalisation(raw: str, expected: str | None) -> None:
    assert normalize_doi(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("arXiv:2104.12255v1", "2104.12255"),
        ("https://arxiv.org/abs/1706.03762v7", "1706.03762"),
        ("https://arxiv.org/pdf/1706.03762.pdf", "1706.03762"),
        ("quant-ph/0201082v1", "quant-ph/0201082"),
        ("abc", None),
    ],
)
def test_arxiv_normalisation(raw: str, expected: str | None) -> None:
    assert normalize_arxiv_id(raw) == expected

"""Human ids, citekeys and identifier normalisation."""

from __future__ import annotations

import itertools

import pytest

from papers.identifiers import (
    PersonName,
    ascii_fold,
    citekey_base,
    citekey_suffixes,
    clean_text,
    fold_key,
    human_id_base,
    human_id_from_base,
    initials,
    is_valid_citekey,
    normalize_arxiv_id,
    normalize_doi,
    normalize_identifier,
    normalize_openreview_id,
    normalize_pmcid,
    normalize_pmid,
    parse_person_name,
    reference_identifier,
    title_key,
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


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://dx.doi.org/10.1000/A", "10.1000/a"),
        ("HTTPS://DOI.ORG/10.1000/b", "10.1000/b"),
        ("DOI:10.1000/c", "10.1000/c"),
        ("  10.1000/d\u200b  ", "10.1000/d"),
        ("10.1007/0-387-28950-X", "10.1007/0-387-28950-x"),  # a check digit X is kept
        ("10.123/too-short-prefix", None),
        ("10.1000/has space", None),
        ("10.1000/" + "x" * 247, "10.1000/" + "x" * 247),  # 255 characters: the most kept
        ("10.1000/" + "x" * 248, None),
        (None, None),
    ],
)
def test_doi_prefixes_shape_and_length(raw: object, expected: str | None) -> None:
    assert normalize_doi(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("ARXIV: 2104.12255", "2104.12255"),
        ("https://export.arxiv.org/abs/2104.12255v2", "2104.12255"),
        ("http://www.arxiv.org/pdf/2104.12255v2.PDF", "2104.12255"),
        ("1501.00001", "1501.00001"),  # four-digit numbers before 2015
        ("Math.AG/0101001", "math.ag/0101001"),  # old ids keep their archive, lower-cased
        ("hep-th/9901001v3", "hep-th/9901001"),
        ("2104.123", None),
        ("hep-th/99010", None),
        (None, None),
    ],
)
def test_arxiv_prefixes_versions_and_old_ids(raw: object, expected: str | None) -> None:
    assert normalize_arxiv_id(raw) == expected


def test_ascii_fold_spells_letters_nfkd_cannot_split() -> None:
    assert ascii_fold("García-Peñalvo") == "Garcia-Penalvo"
    assert ascii_fold("Straße Ærø Łódź Œuvre þing") == "Strasse AEro Lodz OEuvre thing"
    assert ascii_fold("plain ASCII stays") == "plain ASCII stays"
    assert ascii_fold("日本") == ""


def test_fold_key_ignores_case_accents_and_punctuation() -> None:
    assert fold_key("  The  Señor's — Guide!! ") == "the senor s guide"
    assert fold_key("Attention Is All You Need") == fold_key("attention: is all, you need.")
    assert title_key("Attention-Is-All") == "attention is all"
    assert fold_key("abcdefgh", max_length=3) == "abc"
    assert len(fold_key("word " * 100)) == 255


def test_fold_key_of_a_name_without_ascii_form_is_still_distinct() -> None:
    assert fold_key("山田  太郎") == "山田 太郎"
    assert fold_key("ＡＢＣ…") == "abc"  # NFKC gives ASCII letters here
    assert fold_key("Ωμέγα Straße") == "strasse"  # the ASCII part is the key when there is one
    assert fold_key("Ωμέγα") == "ωμέγα"
    assert fold_key("山田") != fold_key("田中")


def test_clean_text_drops_control_and_invisible_characters() -> None:
    assert clean_text(None) == ""
    assert clean_text(2017) == "2017"
    assert clean_text("  a \t b\n") == "a b"
    assert clean_text("a\x00b\u200bc\ufeffd\u00ade") == "a b c d e"
    assert clean_text("line\u2028break") == "line break"
    assert clean_text("keep é and ü") == "keep é and ü"


def test_human_id_lists_three_to_five_authors_with_an_ampersand() -> None:
    three = human_id_base(["Ann Lee", "Bo Kim", "Cy Park"], 2020)
    assert three == "Lee, A., Kim, B., & Park, C. 2020"
    five = human_id_base([f"Ann Name{i}" for i in range(5)], 2020)
    assert five.endswith(", & Name4, A. 2020") and "et al." not in five
    six = human_id_base([f"Ann Name{i}" for i in range(6)], 2020)
    assert six == "Name0, A., Name1, A., Name2, A., Name3, A., Name4, A., et al. 2020"


def test_human_id_takes_parsed_names_and_skips_nameless_ones() -> None:
    people = [PersonName("", ""), PersonName("Marie", "Curie"), "Pierre Curie"]
    assert human_id_base(people, 1903) == "Curie, M., Curie, P. 1903"
    assert human_id_base(["Plato"], None) == "Plato n.d."
    assert human_id_base(["山田 太郎"], 2020) == "太郎, 山. 2020"
    assert len(human_id_base(["Ann " + "x" * 700], 2020)) == 590


def test_human_ids_of_later_papers_with_the_same_base_are_numbered() -> None:
    assert human_id_from_base("Smith, J. 2024", 0) == "[Smith, J. 2024]"
    assert human_id_from_base("Smith, J. 2024", 1) == "[Smith, J. 2024]"
    assert human_id_from_base("Smith, J. 2024", 2) == "[Smith, J. 2024-2]"


def test_initials_of_given_names() -> None:
    assert initials("Francisco José") == "F. J."
    assert initials("Élodie") == "E."
    assert initials("-") == ""
    assert initials("") == ""
    assert initials("太郎") == "太."


def test_citekey_skips_stop_words_and_nameless_authors() -> None:
    assert citekey_base([PersonName("", ""), "Ada Lovelace"], 1843, "The Notes") == (
        "lovelace1843notes"
    )
    assert citekey_base(["Ada Lovelace"], 1843, "On the of and") == "lovelace1843"
    assert citekey_base(["Ada Lovelace"], None, "3D Vision") == "lovelace3d"
    assert citekey_base(["Ada Lovelace"], 2020, "x" * 300) == ("lovelace2020" + "x" * 300)[:180]
    assert citekey_base(["山田 太郎"], 2020, "Title") == "anon2020title"


def test_citekey_suffixes_follow_better_bibtex() -> None:
    suffixes = list(itertools.islice(citekey_suffixes(), 704))
    assert suffixes[:3] == ["", "a", "b"]
    assert suffixes[26] == "z" and suffixes[27] == "aa" and suffixes[28] == "ab"
    assert suffixes[702] == "zz" and suffixes[703] == "-703"
    assert len(set(suffixes)) == 704


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("vaswani2017attention", True),
        ("a", True),
        ("Smith_2020:a-b.c+d/e", True),
        ("x" * 200, True),
        ("x" * 201, False),
        ("", False),
        ("has space", False),
        ("brace{", False),
        ("comma,", False),
    ],
)
def test_citekey_shape(key: str, valid: bool) -> None:
    assert is_valid_citekey(key) is valid


@pytest.mark.parametrize(
    ("raw", "pmid"),
    [
        ("31452104", "31452104"),
        ("PMID: 31452104", "31452104"),
        ("pmid:31452104", "31452104"),
        ("https://pubmed.ncbi.nlm.nih.gov/31452104/", "31452104"),
        ("https://www.ncbi.nlm.nih.gov/pubmed/31452104", "31452104"),
        ("0123", None),
        ("1234567890", None),
        ("PMC6739224", None),
        ("", None),
    ],
)
def test_pmid(raw: str, pmid: str | None) -> None:
    assert normalize_pmid(raw) == pmid


@pytest.mark.parametrize(
    ("raw", "pmcid"),
    [
        ("PMC6739224", "PMC6739224"),
        ("pmc6739224", "PMC6739224"),
        ("PMCID: PMC6739224", "PMC6739224"),
        ("https://pmc.ncbi.nlm.nih.gov/articles/PMC6739224/", "PMC6739224"),
        ("https://www.ncbi.nlm.nih.gov/pmc/articles/PMC6739224", "PMC6739224"),
        ("https://europepmc.org/article/PMC/PMC6739224", "PMC6739224"),
        ("6739224", None),
        ("PMC", None),
    ],
)
def test_pmcid(raw: str, pmcid: str | None) -> None:
    assert normalize_pmcid(raw) == pmcid


def test_openreview_id_bare_only_where_the_field_says_so() -> None:
    url = "https://openreview.net/forum?id=YicbFdNTTy"
    assert normalize_openreview_id(url, bare=False) == "YicbFdNTTy"
    assert normalize_openreview_id("openreview:YicbFdNTTy", bare=False) == "YicbFdNTTy"
    assert normalize_openreview_id("YicbFdNTTy") == "YicbFdNTTy"
    assert normalize_openreview_id("YicbFdNTTy", bare=False) is None
    assert normalize_openreview_id("not an id at all") is None


def test_openreview_links_to_a_review_or_from_a_console_name_their_paper() -> None:
    forum = "https://openreview.net/forum?id=aB3dE5fG7h"
    assert normalize_openreview_id(f"{forum}&noteId=Kl8mN0oP2q", bare=False) == "aB3dE5fG7h"
    assert normalize_openreview_id(f"{forum}&referrer=%5BAuthor%20Console%5D") == "aB3dE5fG7h"
    assert reference_identifier(f"{forum}&noteId=Kl8mN0oP2q") == ("openreview", "aB3dE5fG7h")
    # Parameters belong to a link only: a prefixed or bare id takes none.
    assert normalize_openreview_id("openreview:aB3dE5fG7h&noteId=x") is None
    assert normalize_openreview_id("aB3dE5fG7h&noteId=x") is None


def test_normalize_identifier_by_scheme() -> None:
    assert normalize_identifier("pmid", "PMID: 42") == "42"
    assert normalize_identifier("pmcid", "nonsense") is None
    assert normalize_identifier("acl", "  2020.acl-main.1 ") == "2020.acl-main.1"

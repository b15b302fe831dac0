"""Finding citations in a draft (engines/citecheck/parse.py): every form, and what only
looks like one."""

from __future__ import annotations

import pytest

from engines.citecheck.parse import draft_parse

REFERENCES = """

References
[1] A. Vaswani, N. Shazeer, and N. Parmar, "Attention is all you need," in NeurIPS, 2017.
[2] Devlin, J., Chang, M.-W. (2019). BERT: Pre-training of deep bidirectional
    transformers. NAACL. https://doi.org/10.18653/v1/N19-1423
[3] Ashish Vaswani, Noam Shazeer. 2017. Attention is all you need. In NeurIPS.
[5] He K, Zhang X. Deep residual learning for image recognition. CVPR. 2016. arXiv:1512.03385
"""


def keys(text: str, **options: str) -> list[tuple[str, str]]:
    return [(cite.kind, cite.key) for cite in draft_parse(text, **options).cites]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Attention helps (Vaswani et al., 2017).", [("author_year", "vaswani|2017")]),
        ("Attention helps (Vaswani et al. 2017).", [("author_year", "vaswani|2017")]),
        ("It helps (Vaswani & Shazeer, 2017).", [("author_year", "vaswani|2017")]),
        (
            "Both (see Vaswani et al., 2017a, 2017b; Devlin and Chang, 2019, p. 4).",
            [
                ("author_year", "vaswani|2017a"),
                ("author_year", "vaswani|2017b"),
                ("author_year", "devlin|2019"),
            ],
        ),
        ("Vaswani et al. (2017) showed it.", [("author_year", "vaswani|2017")]),
        ("Vaswani et al. 2017 showed it.", [("author_year", "vaswani|2017")]),
        ("As in Devlin et al., 2019b, it holds.", [("author_year", "devlin|2019b")]),
        (
            "Kim et al. 2014, 2015 agree.",
            [("author_year", "kim|2014"), ("author_year", "kim|2015")],
        ),
        ("Vaswani and Shazeer (2017, p. 5) showed it.", [("author_year", "vaswani|2017")]),
        ("As van der Maaten (2008) did.", [("author_year", "van der maaten|2008")]),
        ("Plain (August et al., 2022).", [("author_year", "august|2022")]),
        ("May and Shen (2021) agree.", [("author_year", "may|2021")]),
        ("See García-Peñalvo (2020).", [("author_year", "garcia penalvo|2020")]),
        (r"It helps \cite{vaswani2017attention}.", [("latex", "vaswani2017attention")]),
        (
            r"It helps \citep[p.~5]{vaswani2017, devlin2019}.",
            [("latex", "vaswani2017"), ("latex", "devlin2019")],
        ),
        (r"\textcite{he2016} showed it.", [("latex", "he2016")]),
        ("It helps [@vaswani2017].", [("pandoc", "vaswani2017")]),
        (
            "It helps [see @vaswani2017, p. 5; -@devlin2019].",
            [("pandoc", "vaswani2017"), ("pandoc", "devlin2019")],
        ),
        ("It helps [@a]. @b says so too.", [("pandoc", "a"), ("pandoc", "b")]),
        ("Shown in doi:10.1038/srep16696.", [("doi", "10.1038/srep16696")]),
        ("Shown at https://doi.org/10.1038/SREP16696, twice.", [("doi", "10.1038/srep16696")]),
        ("A preprint (arXiv:1706.03762v5).", [("arxiv", "1706.03762")]),
        ("See https://arxiv.org/abs/hep-th/9901001.", [("arxiv", "hep-th/9901001")]),
    ],
)
def test_every_citation_form_is_found(text: str, expected: list[tuple[str, str]]) -> None:
    assert keys(text) == expected


def test_numeric_citations_expand_ranges_against_a_numbered_reference_list() -> None:
    draft = draft_parse("Attention helps [1-3, 5], as shown [2]." + REFERENCES)
    assert [(c.kind, c.key) for c in draft.cites] == [
        ("numeric", "1"), ("numeric", "2"), ("numeric", "3"), ("numeric", "5"), ("numeric", "2"),
    ]  # fmt: skip
    assert draft.numbered
    assert draft.cites[0].marker == "[1-3, 5]"
    assert draft.cites[-1].marker == "[2]"


@pytest.mark.parametrize(
    "text",
    [
        "He wrote it [sic] in a hurry.",
        "The claim [citation needed] stands.",
        "Values lie in [0, 1] and [2, 3].",
        "In 2017, the model was released.",
        "The model (2017) was released in (2019).",
        "Table 3 (2019) and Figure 2 (2020) show it.",
        "Since (2015) and in (2016) nothing changed.",
        "The survey ran (August, 2022) and (May 2021).",
        "Write to jane@example.org for data.",
        "Scores rose by 10.5/3 points.",
        "A list [1] with no reference list is prose.",
        "Smith 2017 was a good year, and so was Lee et al. 20170.",
    ],
)
def test_what_only_looks_like_a_citation_is_not_one(text: str) -> None:
    assert keys(text) == []


def test_a_style_hint_keeps_only_that_family() -> None:
    text = r"Both (Vaswani et al., 2017) and \cite{devlin2019} and [@he2016] and [4]."
    assert keys(text, style_hint="latex") == [("latex", "devlin2019")]
    assert keys(text, style_hint="pandoc") == [("pandoc", "he2016")]
    assert keys(text, style_hint="author_year") == [("author_year", "vaswani|2017")]
    # Numeric by the writer's word: no reference list needed.
    assert keys(text, style_hint="numeric") == [("numeric", "4")]


def test_reference_entries_are_read_in_ieee_apa_acl_and_vancouver_forms() -> None:
    refs = {ref.label: ref for ref in draft_parse("Text [1]." + REFERENCES).references}
    ieee, apa, acl, vancouver = refs["1"], refs["2"], refs["3"], refs["5"]
    assert (ieee.authors, ieee.year, ieee.title) == (
        ("Vaswani", "Shazeer", "Parmar"), "2017", "Attention is all you need",
    )  # fmt: skip
    assert (apa.authors, apa.year, apa.doi) == (("Devlin", "Chang"), "2019", "10.18653/v1/n19-1423")
    assert apa.title == "BERT: Pre-training of deep bidirectional transformers"
    assert (acl.authors, acl.year, acl.title) == (
        ("Vaswani", "Shazeer"), "2017", "Attention is all you need",
    )  # fmt: skip
    assert (vancouver.authors, vancouver.year) == (("He", "Zhang"), "2016")
    assert vancouver.title == "Deep residual learning for image recognition"
    assert vancouver.arxiv_id == "1512.03385"


def test_hyphenated_given_names_do_not_read_as_a_title() -> None:
    (entry,) = draft_parse(
        "See [1].\n\nReferences\n[1] Hyun Ju Lee, Janet E. Carter and Jae-sung Bae (2012). "
        "Human umbilical cord blood-derived stem cells. Neurobiol. Aging.\n"
    ).references
    assert (entry.authors, entry.year) == (("Lee", "Carter", "Bae"), "2012")
    assert entry.title == "Human umbilical cord blood-derived stem cells"


def test_reference_list_markers_and_identifiers_are_not_cited_from_the_body() -> None:
    draft = draft_parse("Attention helps [1]." + REFERENCES)
    assert [(c.kind, c.key) for c in draft.cites] == [("numeric", "1")]


def test_bibitems_and_blank_line_separated_entries_are_reference_lists() -> None:
    latex = (
        r"Shown \cite{vas17}." "\n"
        r"\begin{thebibliography}{9}" "\n"
        r"\bibitem{vas17} A.~Vaswani and N.~Shazeer. \newblock Attention is all you need."
        r" \newblock In \emph{NeurIPS}, 2017." "\n"
        r"\end{thebibliography}"
    )  # fmt: skip
    draft = draft_parse(latex)
    assert [ref.label for ref in draft.references] == ["vas17"]
    assert draft.references[0].authors == ("Vaswani", "Shazeer")
    apa = (
        "Shown (Vaswani et al., 2017).\n\n## References\n\n"
        "Vaswani, A., Shazeer, N., & Parmar, N. (2017). Attention is all you need. NeurIPS.\n\n"
        "He, K. (2016). Deep residual learning. CVPR.\n"
    )
    entries = draft_parse(apa).references
    assert [(r.authors[0], r.year, r.title) for r in entries] == [
        ("Vaswani", "2017", "Attention is all you need"),
        ("He", "2016", "Deep residual learning"),
    ]


def test_each_cite_carries_its_sentence_claim_and_quote() -> None:
    text = (
        "Models improved. Vaswani et al. (2017) write that \u201cattention is all you "
        "need\u201d for translation (Devlin et al., 2019). Fig. 2 shows more."
    )
    first, second = draft_parse(text).cites
    assert first.sentence.startswith("Vaswani et al. (2017) write")
    assert first.sentence.endswith("(Devlin et al., 2019).")
    assert first.claim == "write that \u201cattention is all you need\u201d for translation."
    assert first.quote == "attention is all you need"
    assert second.claim == first.claim


def test_a_sentence_does_not_end_at_et_al_or_an_initial() -> None:
    text = "As J. Smith et al. argue, it holds (Smith et al., 2020). Next sentence."
    (cite,) = draft_parse(text).cites
    assert cite.sentence == "As J. Smith et al. argue, it holds (Smith et al., 2020)."


@pytest.mark.parametrize(
    "after",
    ["\\cite{shen2023beyond}.", "[@shen2023beyond].", "(Shen et al., 2023)."],
)
def test_a_marker_after_the_sentence_end_cites_the_sentence_before_it(after: str) -> None:
    # American punctuation puts the period inside the closing quote; the marker follows.
    text = (
        "Models improved. They write that \u201cediting support can transform writing in "
        f"many scenarios.\u201d {after} Next sentence."
    )
    (cite,) = draft_parse(text).cites
    assert cite.sentence.startswith("They write that") and cite.sentence.endswith(after)
    assert cite.quote == "editing support can transform writing in many scenarios."
    assert cite.claim.startswith("They write that")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Finally, Quillfeather and Brackwater (2021) agree.", "quillfeather|2021"),
        ("However, Smith, Lee and Kim (2020) disagree.", "smith|2020"),
        ("Recently, Smith and Jones (2020) disagree.", "smith|2020"),
        ("Interestingly, Smith and Jones (2020) disagree.", "smith|2020"),
        ("Moreover, Smith and Jones (2020) disagree.", "smith|2020"),
        ("It holds (Thus, Smith and Jones, 2020).", "smith|2020"),
        # A name ending in -ly stays a name when no comma follows it.
        ("Kelly and Smith (2020) disagree.", "kelly|2020"),
    ],
)
def test_a_sentence_adverb_or_function_word_is_not_an_author(text: str, expected: str) -> None:
    (cite,) = draft_parse(text).cites
    assert cite.key == expected

"""The three papers cited in the style tests, the strings each CSL style must give for them,
and a minimal CSL style."""

from __future__ import annotations

from typing import Any

NAMES = [
    "Alice Adams", "Bruno Bianchi", "Chen Cheng", "Dana Dietrich", "Emil Eriksson",
    "Fatima Farouk", "Goran Gajic", "Hana Hayashi", "Ivan Ivanov", "Julia Jensen",
    "Kofi Kwame", "Lena Larsen", "Mateo Morales", "Nora Nakamura", "Omar Osman",
    "Priya Patel", "Quentin Quinn", "Rosa Romero", "Sven Svensson", "Tariq Tahir",
    "Uma Unger", "Victor Vogel",
]  # fmt: skip


WHO_URL = "https://www.who.int/publications/i/item/9789240005105"


# The three papers every style is checked on (also over /mcp:
# tests/mcp/test_format_citations.py), as paper_upsert's record values.
CITED: dict[str, dict[str, Any]] = {
    "many": dict(
        title="A large collaborative study of language models", authors=NAMES, year=2023,
        venue="Journal of Machine Learning Research", volume="24", number="7",
        pages="101--135", doi="10.5555/jmlr.2023.101",
    ),
    "undated": dict(
        title="Notes on undated manuscripts", authors=["John Smith", "Jane Doe"], year=None,
        venue="Journal of Archival Studies", volume="8", pages="12-19",
    ),
    "corporate": dict(
        title="World health statistics 2020: Monitoring health for the SDGs",
        # As the BibTeX reader gives '{World Health Organization}': one family name.
        authors=[{"name": "World Health Organization", "family": "World Health Organization"}],
        year=2020, entry_type="techreport", source_url=WHO_URL,
    ),
}  # fmt: skip


EXPECTED = {
    # APA 7 §9.8: 21 or more authors: the first 19, an ellipsis, the last (CSL and
    # citeproc-js write the ellipsis as '…' where the manual prints '. . .').
    ("apa", "many"): (
        "(Adams et al., 2023, p. 5)",
        "Adams, A., Bianchi, B., Cheng, C., Dietrich, D., Eriksson, E., Farouk, F., Gajic, G., "
        "Hayashi, H., Ivanov, I., Jensen, J., Kwame, K., Larsen, L., Morales, M., Nakamura, N., "
        "Osman, O., Patel, P., Quinn, Q., Romero, R., Svensson, S., … Vogel, V. (2023). "
        "A large collaborative study of language models. Journal of Machine Learning "
        "Research, 24(7), 101–135. https://doi.org/10.5555/jmlr.2023.101",
    ),
    ("apa", "undated"): (
        "(Smith & Doe, n.d., p. 5)",
        "Smith, J., & Doe, J. (n.d.). Notes on undated manuscripts. Journal of Archival "
        "Studies, 8, 12–19.",
    ),
    ("apa", "corporate"): (
        "(World Health Organization, 2020, p. 5)",
        "World Health Organization. (2020). World health statistics 2020: Monitoring health "
        f"for the SDGs. {WHO_URL}",
    ),
    # Chicago 18th 13.76/13.111: more than six authors: the first three and 'et al.'; full
    # given names (citeproc-py deviation: initials), titles in headline case, the period
    # inside the quotes (citeproc-py deviation: outside), page ranges abbreviated (101–35).
    ("chicago-author-date", "many"): (
        "(Adams et al. 2023, 5)",
        "Adams, Alice, Bruno Bianchi, Chen Cheng, et al. 2023. “A Large Collaborative Study "
        "of Language Models.” Journal of Machine Learning Research 24 (7): 101–35. "
        "https://doi.org/10.5555/jmlr.2023.101.",
    ),
    ("chicago-author-date", "undated"): (
        "(Smith and Doe, n.d., 5)",
        "Smith, John, and Jane Doe. n.d. “Notes on Undated Manuscripts.” Journal of Archival "
        "Studies 8: 12–19.",
    ),
    ("chicago-author-date", "corporate"): (
        "(World Health Organization 2020, 5)",
        "World Health Organization. 2020. World Health Statistics 2020: Monitoring Health for "
        f"the SDGs. {WHO_URL}.",
    ),
    # IEEE 2023: more than six authors: the first and 'et al.'; initials first; the comma
    # inside the quotes (citeproc-py deviation: outside); '[1] ' then the entry
    # (citeproc-py deviation: '[1]A. Adams').
    ("ieee", "many"): (
        "[1, p. 5]",
        "[1] A. Adams et al., “A large collaborative study of language models,” Journal of "
        "Machine Learning Research, vol. 24, no. 7, pp. 101–135, 2023, "
        "doi: 10.5555/jmlr.2023.101.",
    ),
    ("ieee", "undated"): (
        "[1, p. 5]",
        "[1] J. Smith and J. Doe, “Notes on undated manuscripts,” Journal of Archival Studies, "
        "vol. 8, pp. 12–19.",
    ),
    ("ieee", "corporate"): (
        "[1, p. 5]",
        "[1] World Health Organization, “World health statistics 2020: Monitoring health for "
        f"the SDGs,” 2020. [Online]. Available: {WHO_URL}",
    ),
    # Citing Medicine (NLM/Vancouver): more than six authors: the first six and 'et al.';
    # family name and initials without periods; page ranges without repeated digits;
    # the citation is the number alone (the style prints no locator).
    ("vancouver", "many"): (
        "(1)",
        "1. Adams A, Bianchi B, Cheng C, Dietrich D, Eriksson E, Farouk F, et al. A large "
        "collaborative study of language models. Journal of Machine Learning Research. "
        "2023;24(7):101–35. doi:10.5555/jmlr.2023.101",
    ),
    ("vancouver", "undated"): (
        "(1)",
        "1. Smith J, Doe J. Notes on undated manuscripts. Journal of Archival Studies. 8:12–9.",
    ),
    ("vancouver", "corporate"): (
        "(1)",
        "1. World Health Organization. World health statistics 2020: Monitoring health for the "
        f"SDGs [Internet]. 2020. Available from: {WHO_URL}",
    ),
}


MINIMAL_CSL = """<?xml version="1.0" encoding="utf-8"?>
<style xmlns="http://purl.org/net/xbiblio/csl" class="in-text" version="1.0">
  <info><title>Minimal</title><id>minimal</id><updated>2024-01-01T00:00:00+00:00</updated></info>
  <citation><layout prefix="&lt;" suffix="&gt;"><names variable="author"><name form="short"/>
  </names></layout></citation>
  <bibliography><layout><text variable="title" text-case="uppercase"/></layout></bibliography>
</style>"""

"""Normalising identifiers and names, and generating the human id and the citekey.

Pure functions (no database): the services allocate clash suffixes on top of these bases.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

# --- text folding -------------------------------------------------------------------

_NON_ALNUM = re.compile(r"[^0-9a-z]+")
# Letters that NFKD does not split into base + accent.
_SPECIAL_LETTERS = str.maketrans(
    {
        "ß": "ss",
        "æ": "ae",
        "Æ": "AE",
        "ø": "o",
        "Ø": "O",
        "œ": "oe",
        "Œ": "OE",
        "ł": "l",
        "Ł": "L",
        "đ": "d",
        "Đ": "D",
        "ð": "d",
        "þ": "th",
        "ı": "i",
    }
)


def ascii_fold(text: str) -> str:
    """'García-Peñalvo' -> 'Garcia-Penalvo'; characters with no ASCII form are dropped."""
    if text.isascii():
        return text
    text = text.translate(_SPECIAL_LETTERS)
    decomposed = unicodedata.normalize("NFKD", text)
    return decomposed.encode("ascii", "ignore").decode("ascii")


def fold_key(text: str, max_length: int = 255) -> str:
    """A case-, accent- and punctuation-insensitive key for matching names and titles."""
    folded = _NON_ALNUM.sub(" ", ascii_fold(text).lower()).strip()
    if not folded:
        # Names in scripts with no ASCII form still need a stable, distinct key.
        folded = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return folded[:max_length]


def title_key(title: str) -> str:
    return fold_key(title)


# Control characters (Unicode Cc) and the invisible format characters that break matching.
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff]")


def clean_text(value: object) -> str:
    """Collapse whitespace and drop control and invisible characters; None becomes ''."""
    if value is None or (type(value) is str and not value):
        return ""
    text = value if isinstance(value, str) else str(value)
    if not text.isprintable():  # C-speed check; most values need no cleaning
        text = _INVISIBLE.sub(" ", text)
    return " ".join(text.split())


# --- DOI and arXiv ------------------------------------------------------------------

_DOI_PREFIXES = re.compile(
    r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*|https?://doi\.org/)", re.IGNORECASE
)
_DOI_SHAPE = re.compile(r"^10\.\d{4,9}/\S+$")


# A page range: two page numbers (or roman numerals, 'S12') joined by hyphens or a dash.
_PAGE_RANGE = re.compile(r"^\s*(\w+)\s*(?:-{1,3}|[\u2010-\u2015\u2212])\s*(\w+)\s*$")


def page_range(pages: str) -> str:
    """Pages stored one way: a range as 'first--last' (BibTeX's range; CSL and RIS read
    it), whatever the source's dash: '67-79', '67 – 79' and '67--79' give '67--79'.
    Anything else (one page, 'e1234', free text) is returned as it was."""
    match = _PAGE_RANGE.match(pages)
    return f"{match.group(1)}--{match.group(2)}" if match else pages


def normalize_doi(raw: object) -> str | None:
    """'https://doi.org/10.18653/V1/D18-1057' -> '10.18653/v1/d18-1057'; None if not a DOI.

    DOIs are case-insensitive by definition, so the lower-case form is the key.
    """
    text = clean_text(raw)
    if not text:
        return None
    text = _DOI_PREFIXES.sub("", text).strip().rstrip(".").lower()
    if not _DOI_SHAPE.match(text) or len(text) > 255:
        return None
    return text


_ARXIV_NEW = re.compile(r"^(\d{4}\.\d{4,5})(v\d+)?$")
_ARXIV_OLD = re.compile(r"^([a-z\-]+(?:\.[A-Z]{2})?/\d{7})(v\d+)?$", re.IGNORECASE)
_ARXIV_PREFIX = re.compile(
    r"^(?:arxiv:\s*|https?://(?:www\.|export\.)?arxiv\.org/(?:abs|pdf)/)", re.IGNORECASE
)


def normalize_arxiv_id(raw: object) -> str | None:
    """'arXiv:2104.12255v1' / 'https://arxiv.org/abs/2104.12255' -> '2104.12255'.

    The version is dropped: every version is the same paper for de-duplication.
    Old-style ids keep their archive ('quant-ph/0201082').
    """
    text = clean_text(raw)
    if not text:
        return None
    text = _ARXIV_PREFIX.sub("", text).strip()
    if text.lower().endswith(".pdf"):
        text = text[:-4]
    for pattern in (_ARXIV_NEW, _ARXIV_OLD):
        match = pattern.match(text)
        if match:
            return match.group(1).lower() if pattern is _ARXIV_OLD else match.group(1)
    return None


# --- PubMed, PubMed Central, OpenReview -------------------------------------------------

_PMID_PREFIX = re.compile(
    r"^(?:pmid:?\s*|https?://(?:www\.)?(?:pubmed\.ncbi\.nlm\.nih\.gov|ncbi\.nlm\.nih\.gov/pubmed)/)",
    re.IGNORECASE,
)
_PMID_SHAPE = re.compile(r"^[1-9]\d{0,8}$")
_PMCID = re.compile(
    r"^(?:pmcid:?\s*)?(?:https?://(?:www\.)?(?:ncbi\.nlm\.nih\.gov/pmc/articles|pmc\.ncbi\.nlm\.nih\.gov/articles|europepmc\.org/(?:abstract/pmc|article/pmc))/)?(PMC\d{1,9})/?$",
    re.IGNORECASE,
)
# A forum or PDF link may carry more parameters after the id: the link to a review or
# comment is forum?id=<paper>&noteId=<note>, one from a console adds &referrer=...
_OPENREVIEW = re.compile(
    r"^(?:openreview:\s*([A-Za-z0-9_\-]{6,24})"
    r"|https?://(?:www\.)?openreview\.net/(?:forum|pdf)\?id=([A-Za-z0-9_\-]{6,24})(?:&\S*)?"
    r"|([A-Za-z0-9_\-]{6,24}))$",
    re.IGNORECASE,
)
# The schemes of PaperIdentifier whose values have one normal form, and that form.
IDENTIFIER_NORMALIZERS: dict[str, Callable[[object], str | None]] = {}


def normalize_pmid(raw: object) -> str | None:
    """'PMID: 31452104' / 'https://pubmed.ncbi.nlm.nih.gov/31452104/' -> '31452104'."""
    text = _PMID_PREFIX.sub("", clean_text(raw)).strip().rstrip("/")
    return text if _PMID_SHAPE.match(text) else None


def normalize_pmcid(raw: object) -> str | None:
    """'pmc6739224' / 'https://pmc.ncbi.nlm.nih.gov/articles/PMC6739224/' -> 'PMC6739224'."""
    match = _PMCID.match(clean_text(raw))
    return match.group(1).upper() if match else None


def normalize_openreview_id(raw: object, *, bare: bool = True) -> str | None:
    """'https://openreview.net/forum?id=YicbFdNTTy' / 'openreview:YicbFdNTTy' -> 'YicbFdNTTy'.

    A bare token is accepted only when `bare` (an identifier field that is known to be an
    OpenReview id); free text must carry the prefix or the URL, since a bare 10-character
    token could be anything."""
    text = clean_text(raw)
    match = _OPENREVIEW.match(text)
    if not match:
        return None
    prefixed, linked, plain = match.groups()
    return prefixed or linked or (plain if bare else None)


IDENTIFIER_NORMALIZERS.update(
    {
        "pmid": normalize_pmid,
        "pmcid": normalize_pmcid,
        "openreview": normalize_openreview_id,
        # A DOI kept as an identifier: an alias, or a preprint's published version's DOI.
        "doi": normalize_doi,
        "published_doi": normalize_doi,
    }
)


def reference_identifier(text: str) -> tuple[str, str] | None:
    """The (scheme, value) a paper reference names when it is an external identifier,
    None when it is not one (then it is a paper_id, human id or citekey).

    The rule (a reference is read in this order by papers.selectors): digits alone are a
    paper_id, never a PMID (write 'pmid:31452104' or 'PMID 31452104', or the PubMed URL);
    '[...]' is a human id; otherwise a citekey or citekey alias when one matches, else one
    of: a PMID with its prefix or PubMed URL ('pmid'), a PMCID ('PMC6739224', with or
    without 'pmcid:', or a PMC / Europe PMC URL: 'pmcid'), an OpenReview id with its
    prefix or URL ('openreview:YicbFdNTTy', openreview.net/forum?id=...: 'openreview'), a
    DOI ('10.xxxx/...', 'doi:', a doi.org URL: 'doi') or an arXiv id ('2106.01234',
    'arXiv:...', an arxiv.org URL: 'arxiv')."""
    text = clean_text(text)
    if not text or (text.isascii() and text.isdigit()) or text.startswith("["):
        return None
    pmid = normalize_pmid(text)
    if pmid:
        return ("pmid", pmid)
    pmcid = normalize_pmcid(text)
    if pmcid:
        return ("pmcid", pmcid)
    openreview = normalize_openreview_id(text, bare=False)
    if openreview:
        return ("openreview", openreview)
    doi = normalize_doi(text)
    if doi:
        return ("doi", doi)
    arxiv_id = normalize_arxiv_id(text)
    if arxiv_id:
        return ("arxiv", arxiv_id)
    return None


def normalize_identifier(scheme: str, raw: object) -> str | None:
    """`raw` in its normal form for `scheme` (None when it is not one); schemes without a
    normaliser keep the cleaned text."""
    normalizer = IDENTIFIER_NORMALIZERS.get(scheme)
    return normalizer(raw) if normalizer else (clean_text(raw) or None)


# --- author names -------------------------------------------------------------------

_PARTICLES = {"van", "von", "der", "den", "de", "del", "della", "di", "da", "du", "la", "le", "dos"}
# Generational suffixes that stay with the family name ("Smith Jr."); also read by
# papers.bibtex.writer, which writes them as BibTeX's "von Last, Jr, First" middle part.
NAME_SUFFIXES = frozenset({"jr", "jr.", "sr", "sr.", "ii", "iii", "iv"})


@dataclass(frozen=True)
class PersonName:
    given: str
    family: str

    @property
    def display(self) -> str:
        return f"{self.given} {self.family}".strip()

    @functools.cached_property
    def key(self) -> str:
        # Cached: parse_person_name hands out one instance per name, and an import asks
        # for each author's key several times.
        return fold_key(self.display)


@functools.lru_cache(maxsize=65536)
def parse_person_name(raw: str) -> PersonName:
    """Split 'Last, First' or 'First [particles] Last' into given and family names."""
    name = clean_text(raw).strip(" ,")
    if not name:
        return PersonName("", "")
    if "," in name:
        family, _, given = name.partition(",")
        given = given.strip()
        # 'Smith, Jr., John' (BibTeX's three-part form): the suffix stays with the family name.
        if "," in given:
            suffix, _, given = given.partition(",")
            family = f"{family.strip()} {suffix.strip()}"
        return PersonName(given.strip(), family.strip())
    parts = name.split()
    if len(parts) == 1:
        return PersonName("", parts[0])
    if parts[-1].lower() in NAME_SUFFIXES and len(parts) > 2:
        parts = [*parts[:-2], f"{parts[-2]} {parts[-1]}"]
    family_start = len(parts) - 1
    while family_start > 1 and parts[family_start - 1].lower() in _PARTICLES:
        family_start -= 1
    return PersonName(" ".join(parts[:family_start]), " ".join(parts[family_start:]))


def initials(given: str) -> str:
    """'Francisco José' -> 'F. J.'; 'Jean-Pierre' -> 'J.-P.'; 'F.J.' -> 'F. J.'."""
    result = []
    for word in given.replace(".", ". ").split():
        letters = [part for part in word.split("-") if part and part[0].isalnum()]
        if letters:
            result.append(
                "-".join(f"{ascii_fold(part[0]).upper() or part[0]}." for part in letters)
            )
    return " ".join(result)


# --- the human-readable id (the `id` clients show and cite) ----------------------------

MAX_AUTHORS_IN_ID = 5


def _people(authors: Sequence[str | PersonName]) -> list[PersonName]:
    return [a if isinstance(a, PersonName) else parse_person_name(a) for a in authors]


def human_id_base(author_names: Sequence[str | PersonName], year: int | None) -> str:
    """'Smith, J., Johnson, A. 2024', the text of the id '[Smith, J., Johnson, A. 2024]'.

    Up to five authors are listed, the last after '& ' when there are three or more, the
    form clients already cite); longer lists end in 'et al.'. No authors gives
    'Anonymous', no year 'n.d.'.
    """
    people = [person for person in _people(author_names) if person.family]
    year_text = str(year) if year else "n.d."
    if not people:
        return f"Anonymous {year_text}"
    shown = people[:MAX_AUTHORS_IN_ID]
    parts = []
    for person in shown:
        family = ascii_fold(person.family) or person.family
        given = initials(person.given)
        parts.append(f"{family}, {given}" if given else family)
    if len(people) > MAX_AUTHORS_IN_ID:
        names = ", ".join(parts) + ", et al."
    elif len(parts) >= 3:
        names = ", ".join(parts[:-1]) + ", & " + parts[-1]
    else:
        names = ", ".join(parts)
    return f"{names} {year_text}"[:590]


def human_id_from_base(base: str, seq: int) -> str:
    """Seq 1 is the plain id; later papers with the same base get '-2', '-3', ..."""
    return f"[{base}]" if seq <= 1 else f"[{base}-{seq}]"


# --- the citekey (Better BibTeX style: auth.lower + year + first title word) ----------

_TITLE_STOPWORDS = {
    "a", "an", "the", "on", "of", "in", "for", "to", "and", "with", "from", "by", "at",
    "is", "are", "via", "towards", "toward", "using", "into", "over", "under",
}  # fmt: skip


def citekey_base(author_names: Sequence[str | PersonName], year: int | None, title: str) -> str:
    """'vaswani2017attention' from (['Ashish Vaswani', ...], 2017, 'Attention Is All You Need')."""
    family = next((person.family for person in _people(author_names) if person.family), "")
    author_part = re.sub(r"[^a-z]", "", ascii_fold(family).lower()) or "anon"
    word_part = ""
    for word in re.findall(r"[a-z0-9]+", ascii_fold(title).lower()):
        if word not in _TITLE_STOPWORDS:
            word_part = word
            break
    return f"{author_part}{year or ''}{word_part}"[:180]


def citekey_suffixes() -> Iterator[str]:
    """Better BibTeX's clash postfixes: '', 'a' ... 'z', 'aa' ... 'zz', then '-703', ..."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    yield ""
    yield from letters
    yield from (a + b for a in letters for b in letters)
    yield from (f"-{n}" for n in itertools.count(len(letters) ** 2 + len(letters) + 1))


_CITEKEY_SHAPE = re.compile(r"^[A-Za-z0-9_:\-.+/]{1,200}$")


def is_valid_citekey(key: str) -> bool:
    return bool(_CITEKEY_SHAPE.match(key))

"""Finding the citations in a piece of writing, and its reference list (pure: no database).

A draft is split into its body and its reference list (the entries after a last heading
such as "References" or "Bibliography", or `\\bibitem`s). In the body, every citation
marker becomes one `Cite` per work it names: "(Vaswani et al., 2017; Devlin et al.,
2019)" is two, "[1-3, 5]" is four. The forms read:

- author-year, parenthetical "(Vaswani et al., 2017a, p. 5)" and narrative "Vaswani and
  Shazeer (2017)";
- numeric "[3]", "[1-3, 5]" (with a numbered reference list, or `style_hint="numeric"`);
- LaTeX `\\cite{key}`, `\\citep[p.~5]{a,b}`, `\\textcite{key}` and the other natbib/biblatex
  commands; pandoc `[@key]`, `[see @a, p. 5; -@b]` (and narrative `@key` when the draft
  uses pandoc brackets or `style_hint="pandoc"`);
- DOIs (`10.xxxx/...`, doi.org URLs) and arXiv ids (`arXiv:1706.03762`, arxiv.org URLs).

What is deliberately not a citation: "[sic]", "[citation needed]", "[0, 1]", a year in
prose ("in 2017", "(2017)" with no name before it), "Table 3 (2019)"; numbers in brackets
that no numbered reference list names, unless the draft says it is numeric.

Each cite carries its sentence and the claim (the sentence without citation markers),
which is what support checking compares with the cited paper.

One module because it is one pure parser: every citation form is read against the same body,
sentence boundaries and reference list, and the forms decide together which text is a
citation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from papers.identifiers import fold_key, normalize_arxiv_id, normalize_doi, parse_person_name

AUTHOR_YEAR = "author_year"
NUMERIC = "numeric"
LATEX = "latex"
PANDOC = "pandoc"
DOI = "doi"
ARXIV = "arxiv"
STYLES = (AUTHOR_YEAR, NUMERIC, LATEX, PANDOC)

MAX_RANGE = 50  # "[1-3000]" is no citation range
MAX_CITES = 500

_PARTICLE = r"(?:(?:van|von|der|den|de|del|della|di|da|du|la|le|dos|ten|ter)\s+)"
_NAME = rf"{_PARTICLE}*[A-ZÀ-ÖØ-Þ][\w'’\-]*[\w]"
_YEAR = r"(?:1[6-9]|20)\d{2}[a-z]?"
_AUTHORS = (
    rf"{_NAME}(?:\s+et\s+al\.?|\s+(?:and|&)\s+{_NAME}"
    rf"|(?:,\s*{_NAME})+,?\s+(?:and|&)\s+{_NAME})?"
)
# Words that look like names before a year and are not (Table 3 (2019), In (2017)).
_NOT_NAMES = {
    "table", "tables", "figure", "figures", "fig", "figs", "section", "sections", "sec",
    "eq", "equation", "equations", "appendix", "chapter", "part", "page", "pages", "step",
    "in", "on", "at", "since", "before", "after", "until", "from", "by", "the", "a", "an",
    "see", "cf", "also", "and", "or", "of", "for", "to", "as", "with", "this", "that",
    "spring", "summer", "autumn", "fall", "winter", "year", "years", "version", "release",
    "edition", "vol", "volume",
}  # fmt: skip
_MONTHS = {
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
}  # fmt: skip
# Closed-class English words (determiners, pronouns, prepositions, conjunctions, auxiliaries)
# and sentence adverbs / discourse markers. Capitalised at the start of a sentence they look
# like the first of several names ("Finally, Smith and Jones (2020)", "However, Smith,
# Lee and Kim (2020)") and are not one; so is any capitalised "-ly" word followed by a comma
# ("Interestingly, ..."). Such a word is dropped from an author list when a name follows it;
# resolution puts it back if the draft's reference list or the library knows it as an
# author (resolve.py, names_checked), since a few of them are surnames too.
_FUNCTION_WORDS = frozenset(
    """a about above according across after afterwards again against albeit all almost along
    already also although always among amongst an and another any anyhow anyway as at
    because before beforehand behind below beneath beside besides between beyond both but
    by can clearly conversely consequently could despite did do does during each either else
    elsewhere especially even eventually ever every except finally first firstly for
    formerly from further furthermore given hence her here hereby herein his how however
    i if importantly in indeed instead into it its last lastly later likewise many may
    meanwhile moreover most much must namely nevertheless next no nonetheless nor not
    notably now of often on once one only or other others otherwise our overall perhaps
    previously rather recently regardless second secondly similarly since so some specifically
    still subsequently such than that the their then thence there thereafter thereby
    therefore these they third thirdly this those though thus to together too toward towards
    typically ultimately under unlike until upon we what whatever when whenever where
    whereas whether which while who whose why with within without yet""".split()
)
_PREFIXES = re.compile(r"^(?:(?:see|cf\.?|e\.g\.?,?|i\.e\.?,?|also|but|and|for example,?)\s+)+",
                       re.IGNORECASE)  # fmt: skip

_NARRATIVE = re.compile(
    rf"(?P<authors>{_AUTHORS})(?:'s|’s)?\s+\((?P<years>{_YEAR}(?:\s*[,;]\s*{_YEAR})*)"
    r"(?P<loc>\s*,\s*[^()]{1,40})?\)"
)
_PARENS = re.compile(r"\((?P<inner>[^()]{4,600})\)")
# "Vaswani et al. 2017" / "Vaswani et al., 2017" in running text, no parentheses (drafts
# and notes write it so): only with "et al.", which prose without a citation never has.
_BARE_ET_AL = re.compile(
    rf"(?<![\w(])(?P<authors>{_NAME}\s+et\s+al\.?),?\s+(?P<years>{_YEAR}(?:,\s*{_YEAR})*)(?![\w)])"
    r"(?P<loc>)"
)
_AY_PART = re.compile(
    rf"^(?P<authors>{_AUTHORS}),?\s+(?P<years>{_YEAR}(?:\s*,\s*{_YEAR})*)"
    r"(?:\s*,\s*(?P<loc>(?:pp?\.|ch\.|chap\.|sec\.|§|fig\.|table)\s*[^;]{1,30}))?\s*$",
    re.IGNORECASE,
)
_NUM_ITEM = r"\d{1,4}(?:\s*[-–—]\s*\d{1,4})?"
_NUMERIC = re.compile(rf"\[(?P<inner>\s*{_NUM_ITEM}(?:\s*,\s*{_NUM_ITEM})*\s*)\]")
_LATEX = re.compile(
    r"\\(?:[Cc]ite[pt]?|citealp|citealt|citeauthor|citeyear|[Pp]arencite|[Tt]extcite|"
    r"[Aa]utocite|footcite|fullcite|supercite|nocite)\*?"
    r"(?P<opts>(?:\[[^\]]*\]){0,2})\{(?P<keys>[^{}]{1,500})\}"
)
_PANDOC_BRACKET = re.compile(r"\[(?P<inner>(?:[^\[\]]*?[\s;-])?-?@[^\[\]]*)\]")
_PANDOC_KEY = re.compile(r"(?:^|(?<=[\s;(]))-?@(?P<key>[\w][\w:.#$%&+?<>~/-]*)")
_PANDOC_NARRATIVE = re.compile(r"(?<![\w.@])@(?P<key>[A-Za-z_][\w:.#$%&+?<>~/-]*)")
_DOI_TEXT = re.compile(
    r"(?:https?://(?:dx\.)?doi\.org/|\bdoi:\s*)?\b(?P<doi>10\.\d{4,9}/[^\s\"<>]+)", re.IGNORECASE
)
_ARXIV_TEXT = re.compile(
    r"(?:\barXiv:\s*|https?://(?:www\.)?arxiv\.org/(?:abs|pdf)/)"
    r"(?P<id>\d{4}\.\d{4,5}(?:v\d+)?|[a-z\-]+(?:\.[A-Z]{2})?/\d{7}(?:v\d+)?)",
    re.IGNORECASE,
)
_HEADING = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*|\\section\*?\{|\\chapter\*?\{|\*\*)?"
    r"(?:references|bibliography|works cited|literature cited|reference list|sources)"
    r"(?:\}|\*\*)?[ \t]*:?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_BIBITEM = re.compile(r"\\bibitem(?:\[[^\]]*\])?\{(?P<key>[^}]+)\}")
_NUMBERED = re.compile(r"^\s*(?:\[(?P<a>\d{1,4})\]|(?P<b>\d{1,4})[.)])\s+")
_QUOTED_TITLE = re.compile(r"[“\"](?P<title>[^”\"]{8,400}?)[,.]?[”\"]")
_REF_YEAR = re.compile(rf"\(?\b(?P<year>{_YEAR})\b\)?")
_INITIALS = re.compile(r"^(?:(?:[A-ZÀ-Þ]\.?|[A-ZÀ-Þ][a-z]\.)[\s-]*){1,4}$")
_ABBREVIATIONS = {
    "al", "e.g", "i.e", "fig", "figs", "eq", "eqs", "sec", "no", "vol", "pp", "p", "cf",
    "vs", "etc", "dr", "mr", "ms", "prof", "st", "ch", "approx", "resp", "ref", "refs",
}  # fmt: skip
_QUOTE = re.compile(r"[“\"](?P<q>[^”\"]{12,1200})[”\"]")


@dataclass(frozen=True)
class Reference:
    """One entry of the draft's reference list, as far as it can be read."""

    label: str  # "3" for numbered lists, the \bibitem key, or the entry's position
    raw: str
    authors: tuple[str, ...] = ()  # family names as written
    year: str = ""
    title: str = ""
    doi: str = ""
    arxiv_id: str = ""

    @property
    def first_author_key(self) -> str:
        return fold_key(self.authors[0]) if self.authors else ""


@dataclass(frozen=True)
class Cite:
    """One cited work: a marker names one or more of them."""

    marker: str
    kind: str  # author_year | numeric | latex | pandoc | doi | arxiv
    key: str  # "3", a citekey, "Vaswani|2017a", a DOI or an arXiv id
    start: int
    sentence: str
    claim: str
    author: str = ""
    year: str = ""
    locator: str = ""
    quote: str = ""  # text the sentence quotes, if any
    # Leading common words dropped from an author list ("Finally" of "Finally, Smith and
    # Jones (2020)"): resolution restores them when the draft or the library has them as
    # an author.
    dropped: str = ""


@dataclass
class Draft:
    body: str
    references: list[Reference] = field(default_factory=list)
    cites: list[Cite] = field(default_factory=list)
    numbered: bool = False  # the reference list is numbered ([1] ... or 1. ...)

    def reference(self, label: str) -> Reference | None:
        return next((ref for ref in self.references if ref.label == label), None)


def draft_parse(text: str, *, style_hint: str | None = None) -> Draft:
    """The citations and reference list of `text`; `style_hint` (author_year, numeric,
    latex, pandoc) keeps only that family of markers (DOIs and arXiv ids always count)."""
    body, references, numbered = _split_references(text)
    draft = Draft(body=body, references=references, numbered=numbered)
    spans: list[tuple[int, int]] = []
    found: list[tuple[int, int, list[_Found]]] = []

    def take(start: int, end: int, items: list[_Found]) -> None:
        if items and not any(start < e and s < end for s, e in spans):
            spans.append((start, end))
            found.append((start, end, items))

    want = (lambda kind: style_hint in (None, kind)) if style_hint else (lambda kind: True)
    if want(LATEX):
        for match in _LATEX.finditer(body):
            take(match.start(), match.end(), _latex(match))
    if want(PANDOC):
        pandoc_used = style_hint == PANDOC
        for match in _PANDOC_BRACKET.finditer(body):
            items = _pandoc(match.group("inner"))
            pandoc_used = pandoc_used or bool(items)
            take(match.start(), match.end(), items)
        if pandoc_used:
            for match in _PANDOC_NARRATIVE.finditer(body):
                take(match.start(), match.end(), [_Found(PANDOC, _clean_key(match["key"]))])
    for match in _ARXIV_TEXT.finditer(body):
        arxiv_id = normalize_arxiv_id(match["id"])
        if arxiv_id:
            take(match.start(), match.end(), [_Found(ARXIV, arxiv_id)])
    for match in _DOI_TEXT.finditer(body):
        doi = normalize_doi(match["doi"].rstrip(".,;:)]}'’”"))
        if doi:
            take(match.start(), match.start("doi") + len(doi), [_Found(DOI, doi)])
    if want(AUTHOR_YEAR):
        for match in _NARRATIVE.finditer(body):
            take(match.start(), match.end(), _narrative(match))
        for match in _PARENS.finditer(body):
            take(match.start(), match.end(), _parenthetical(match["inner"]))
        for match in _BARE_ET_AL.finditer(body):
            take(match.start(), match.end(), _narrative(match))
    if want(NUMERIC):
        labels = {ref.label for ref in references} if numbered else set()
        for match in _NUMERIC.finditer(body):
            items = _numeric(match["inner"], labels, trusted=style_hint == NUMERIC)
            take(match.start(), match.end(), items)

    found.sort(key=lambda item: item[0])
    sentences = _sentences(body)
    for start, end, items in found:
        sentence_start, sentence_end = _sentence_at(sentences, start)
        claim = _claim(body[sentence_start:sentence_end], spans, sentence_start)
        if not any(char.isalnum() for char in claim):
            # Markers after the sentence's own end ('... summarization.” \cite{x}.',
            # 'It holds. [3]'): they cite the sentence before them.
            sentence_start = _sentence_before(sentences, sentence_start)
            claim = _claim(body[sentence_start:sentence_end], spans, sentence_start)
        sentence = body[sentence_start:sentence_end].strip()
        quote = _quote(claim)
        for item in items:
            draft.cites.append(
                Cite(
                    marker=body[start:end],
                    kind=item.kind,
                    key=item.key,
                    start=start,
                    sentence=sentence,
                    claim=claim,
                    author=item.author,
                    year=item.year,
                    locator=item.locator,
                    quote=quote,
                    dropped=item.dropped,
                )
            )
            if len(draft.cites) >= MAX_CITES:
                return draft
    return draft


@dataclass(frozen=True)
class _Found:
    kind: str
    key: str
    author: str = ""
    year: str = ""
    locator: str = ""
    dropped: str = ""


_LEADING_WORD = re.compile(r"(?P<word>[A-Z][a-z]+)(?P<comma>\s*,)?\s+")


def _without_common_words(authors: str) -> tuple[str, str]:
    """The author list without its leading common words, and the words dropped: a word
    goes only when a name still follows it."""
    dropped: list[str] = []
    while match := _LEADING_WORD.match(authors):
        word = match["word"].lower()
        common = word in _FUNCTION_WORDS or (
            match["comma"] is not None and word.endswith("ly") and len(word) > 4
        )
        rest = authors[match.end() :]
        if not common or not re.match(_NAME, rest):
            break
        dropped.append(match["word"])
        authors = rest
    return authors, " ".join(dropped)


def _first_author(authors: str) -> str:
    name = re.split(r"\s+et\s+al|\s+and\s+|\s*&\s*|,", authors, maxsplit=1)[0]
    return name.strip()


def _author_years(authors: str, years: str, locator: str) -> list[_Found]:
    authors, dropped = _without_common_words(authors)
    first = _first_author(authors)
    surname = first.split()[-1] if first else ""
    if not surname or surname.lower() in _NOT_NAMES or fold_key(first) in _NOT_NAMES:
        return []
    if fold_key(authors) in _MONTHS:  # "(May 2020)" is a date; "(May et al., 2020)" cites
        return []
    return [
        _Found(AUTHOR_YEAR, f"{fold_key(first)}|{year}", first, year, locator.strip(" ,"), dropped)
        for year in re.findall(_YEAR, years)
    ]


def _narrative(match: re.Match[str]) -> list[_Found]:
    return _author_years(match["authors"], match["years"], match["loc"] or "")


def _parenthetical(inner: str) -> list[_Found]:
    items: list[_Found] = []
    for part in inner.split(";"):
        part = _PREFIXES.sub("", part.strip())
        match = _AY_PART.match(part)
        if match is None:
            continue
        items += _author_years(match["authors"], match["years"], match["loc"] or "")
    return items


def _numeric(inner: str, labels: set[str], *, trusted: bool) -> list[_Found]:
    numbers: list[int] = []
    for item in inner.split(","):
        bounds = [int(n) for n in re.split(r"\s*[-–—]\s*", item.strip())]
        low, high = bounds[0], bounds[-1]
        if low < 1 or high < low or high - low > MAX_RANGE:
            return []
        numbers += range(low, high + 1)
    keys = [str(n) for n in dict.fromkeys(numbers)]
    if not trusted and not any(key in labels for key in keys):
        return []
    return [_Found(NUMERIC, key) for key in keys]


def _latex(match: re.Match[str]) -> list[_Found]:
    options = re.findall(r"\[([^\]]*)\]", match["opts"] or "")
    locator = options[-1].replace("~", " ") if options else ""
    keys = [key.strip() for key in match["keys"].split(",") if key.strip()]
    return [_Found(LATEX, key, locator=locator) for key in keys]


def _clean_key(key: str) -> str:
    return key.rstrip(".,;:!?)")


def _pandoc(inner: str) -> list[_Found]:
    items = []
    for part in inner.split(";"):
        part = part.strip()
        match = _PANDOC_KEY.search(part)
        if match is None:
            continue
        locator = part[match.end() :].strip(" ,")
        items.append(_Found(PANDOC, _clean_key(match["key"]), locator=locator))
    return items


# --- sentences ------------------------------------------------------------------------


def _sentences(body: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence: ends at . ! ? or a blank line, not after an
    abbreviation (et al., e.g., Fig.), an initial, or inside brackets and parentheses."""
    bounds, start, depth = [], 0, 0
    index = 0
    length = len(body)
    while index < length:
        char = body[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        elif char == "\n" and body[index + 1 : index + 2] == "\n":
            bounds.append((start, index))
            start, depth = index + 1, 0
        elif char in ".!?" and depth == 0:
            end = index + 1
            while end < length and body[end] in "\"'”’)":
                end += 1
            if end >= length or body[end].isspace():
                word = re.search(r"([\w.]+)$", body[start:index])
                token = (word.group(1) if word else "").lower()
                is_abbreviation = token in _ABBREVIATIONS or (
                    char == "." and len(token) == 1 and token.isalpha()
                )
                if not is_abbreviation:
                    bounds.append((start, end))
                    start = end
                index = end
                continue
        index += 1
    if start < length:
        bounds.append((start, length))
    return bounds


def _sentence_at(sentences: list[tuple[int, int]], offset: int) -> tuple[int, int]:
    for start, end in sentences:
        if start <= offset < end:
            return start, end
    return sentences[-1] if sentences else (0, 0)


def _sentence_before(sentences: list[tuple[int, int]], start: int) -> int:
    """The start of the sentence before the one starting at `start` (itself if first)."""
    earlier = [bounds[0] for bounds in sentences if bounds[0] < start]
    return earlier[-1] if earlier else start


def _claim(sentence: str, spans: list[tuple[int, int]], offset: int) -> str:
    """The sentence without its citation markers (and the spaces they leave)."""
    pieces, cursor = [], 0
    for start, end in sorted(spans):
        local_start, local_end = start - offset, end - offset
        if local_end <= 0 or local_start >= len(sentence):
            continue
        pieces.append(sentence[cursor : max(cursor, local_start)])
        cursor = max(cursor, local_end)
    pieces.append(sentence[cursor:])
    text = " ".join("".join(pieces).split())
    return re.sub(r"\s+([,.;:!?])", r"\1", text).strip()


def _quote(claim: str) -> str:
    """The longest quoted passage of at least three words, if the claim quotes one."""
    quotes = [m["q"].strip() for m in _QUOTE.finditer(claim) if len(m["q"].split()) >= 3]
    return max(quotes, key=len) if quotes else ""


# --- the reference list -----------------------------------------------------------------


def _split_references(text: str) -> tuple[str, list[Reference], bool]:
    headings = list(_HEADING.finditer(text))
    bibitem = _BIBITEM.search(text)
    if headings:
        body, tail = text[: headings[-1].start()], text[headings[-1].end() :]
    elif bibitem:
        body, tail = text[: bibitem.start()], text[bibitem.start() :]
    else:
        return text, [], False
    if _BIBITEM.search(tail):
        return body, _bibitems(tail), False
    entries, numbered = _entries(tail)
    references = [
        _reference(label or str(position), raw)
        for position, (label, raw) in enumerate(entries, start=1)
    ]
    return body, references, numbered


def _bibitems(tail: str) -> list[Reference]:
    items = list(_BIBITEM.finditer(tail))
    references = []
    for index, match in enumerate(items):
        end = items[index + 1].start() if index + 1 < len(items) else len(tail)
        raw = re.sub(r"\\end\{thebibliography\}.*", "", tail[match.end() : end], flags=re.S)
        references.append(_reference(match["key"].strip(), _latex_plain(raw)))
    return references


def _latex_plain(raw: str) -> str:
    text = re.sub(r"\\newblock|\\(?:em|it|bf)\b|\\(?:emph|textit|textbf)\{([^}]*)\}", r"\1", raw)
    return " ".join(text.replace("{", "").replace("}", "").replace("~", " ").split())


def _entries(tail: str) -> tuple[list[tuple[str, str]], bool]:
    lines = tail.strip("\n").splitlines()
    numbered = sum(1 for line in lines if _NUMBERED.match(line)) >= max(1, len(
        [line for line in lines if line.strip()]) // 3)  # fmt: skip
    entries: list[tuple[str, str]] = []
    if numbered:
        for line in lines:
            match = _NUMBERED.match(line)
            if match:
                entries.append((match["a"] or match["b"], line[match.end() :].strip()))
            elif line.strip() and entries:
                label, raw = entries[-1]
                entries[-1] = (label, f"{raw} {line.strip()}")
        return entries, True
    blocks = [" ".join(b.split()) for b in re.split(r"\n\s*\n", tail) if b.strip()]
    if len(blocks) <= 1 and len([line for line in lines if line.strip()]) > 1:
        blocks = [line.strip() for line in lines if line.strip()]
    return [("", re.sub(r"^[-*•]\s+", "", block)) for block in blocks], False


def _reference(label: str, raw: str) -> Reference:
    """Authors, year, title, DOI and arXiv id of one entry (APA, ACL, IEEE, Vancouver...)."""
    doi_match = _DOI_TEXT.search(raw)
    doi = normalize_doi(doi_match["doi"].rstrip(".,;:)]}")) if doi_match else None
    arxiv_match = _ARXIV_TEXT.search(raw)
    arxiv_id = normalize_arxiv_id(arxiv_match["id"]) if arxiv_match else None
    text = raw
    for match in (doi_match, arxiv_match):
        if match is not None:
            text = text.replace(match.group(0), " ")
    text = re.sub(r"https?://\S+", " ", text)
    title, authors_text, year = "", "", ""
    quoted = _QUOTED_TITLE.search(text)
    year_match = _REF_YEAR.search(text)
    if quoted:
        title = quoted["title"].strip()
        before = text[: quoted.start()]
        year_match = _REF_YEAR.search(before) or _REF_YEAR.search(text[quoted.end() :])
        year = year_match["year"] if year_match else ""
        authors_text = _REF_YEAR.split(before, maxsplit=1)[0] if year else before
    elif year_match and _has_title(text[: year_match.start()]):
        # Vancouver and the like: the year comes after the title ('He K, Zhang X. Deep
        # residual learning. CVPR. 2016.').
        year = year_match["year"]
        segments = [seg for seg in re.split(r"\.\s+", text[: year_match.start()]) if seg]
        at = next(i for i, seg in enumerate(segments) if _has_title(seg))
        authors_text, title = ". ".join(segments[:at]), segments[at]
    elif year_match:
        year = year_match["year"]
        authors_text = text[: year_match.start()]
        rest = text[year_match.end() :].lstrip(" .),:")
        title = re.split(r"(?<=[^A-Z\s])[.?!](?:\s|$)", rest, maxsplit=1)[0]
    else:
        parts = re.split(r"(?<=[^A-Z\s])\.\s", text, maxsplit=2)
        authors_text = parts[0]
        title = parts[1] if len(parts) > 1 else ""
    return Reference(
        label=label,
        raw=raw,
        authors=tuple(_family_names(authors_text)),
        year=year,
        title=title.strip(" .,"),
        doi=doi or "",
        arxiv_id=arxiv_id or "",
    )


_NAME_WORDS = {"and", "et", "al", "van", "von", "der", "den", "de", "del", "di", "da", "du",
               "la", "le", "dos", "ten", "ter", "jr", "sr"}  # fmt: skip


def _has_title(segment: str) -> bool:
    """A segment with two lower-case words that are no name particles reads as a title
    ('Jae-sung' is a name: hyphenated words count whole)."""
    lower = [
        word
        for word in re.findall(r"[^\W\d_]+(?:[-'’][^\W\d_]+)*", segment)
        if len(word) >= 3 and word.islower() and word not in _NAME_WORDS
    ]
    return len(lower) >= 2


def _family_names(text: str) -> list[str]:
    """Family names from 'Vaswani, A., Shazeer, N., & Parmar, N.', 'Ashish Vaswani, Noam
    Shazeer, and Niki Parmar', 'A. Vaswani, N. Shazeer' or 'Vaswani A, Shazeer N'."""
    text = re.sub(r"\bet\s+al\.?", "", text)
    text = re.sub(r"\s*(?:,?\s+and\s+|\s*&\s*|;)\s*", ",", text).strip(" ,.()")
    pieces = [piece.strip() for piece in text.split(",") if piece.strip()]
    names: list[str] = []
    for piece in pieces:
        if _INITIALS.match(piece) and names:
            continue  # 'Vaswani, A.': the initials of the name before
        words = piece.split()
        if len(words) >= 2 and _INITIALS.match(words[-1]) and not _INITIALS.match(words[0]):
            names.append(" ".join(words[:-1]))  # Vancouver: 'Vaswani A'
            continue
        family = parse_person_name(piece).family
        if family:
            names.append(family)
    return names[:100]

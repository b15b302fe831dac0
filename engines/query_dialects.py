"""Search strings (engines/search_strings.py) in each source's own syntax: one renderer per
`query_dialect` (docs/SEARCH-STRINGS.md, "Translation per source").

Two rules keep a translation honest:

- nothing is lost silently: every field widened, truncation dropped, boolean group
  flattened or clause left out is a note of that source;
- in strict mode (reviews, whose search log must be the search as written) a source is
  refused, with `Untranslatable` saying why, when the translation would leave out a
  constraint: a NOT part, a controlled-vocabulary clause (`[mh]`, `[pt]`) or an author
  (`[au]`) the source cannot search. Widening a field, dropping truncation and reading
  OR groups as keywords are approximations, noted but never refused: the source's
  relevance order still keys on every term.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from engines.search_strings import (
    FIELDS,
    OPEN_END_YEAR,
    VOCABULARY_FIELDS,
    Clause,
    DateRange,
    Node,
    Not,
    Or,
    SearchString,
    bound,
)

# A word that needs no quotes in any dialect (letters, digits, a truncation star).
_PLAIN_WORD_RE = re.compile(r"[\w*]+", re.UNICODE)
# The dialects `translate` knows (engines set theirs as `query_dialect`).
DIALECTS = (
    "pubmed", "europepmc", "europepmc_preprints", "arxiv", "google_scholar", "openalex", "dblp",
    "local", "plain",
)  # fmt: skip


class Untranslatable(Exception):
    """A source cannot run the search without leaving out a constraint (strict mode)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Translation:
    """The query sent to one source, what it could not keep (`notes`), and the date range
    it should filter by through the request (None: the query itself carries it, or the
    search has none)."""

    dialect: str
    query: str
    notes: tuple[str, ...] = ()
    dates: DateRange | None = None


@dataclass
class _Losses:
    """What a translation approximated (notes) and what it left out (`lost`, refused in
    strict mode), each said once."""

    notes: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def lose(self, text: str) -> None:
        self.note(text)
        if text not in self.lost:
            self.lost.append(text)


def translate(search: SearchString, dialect: str, *, strict: bool = False) -> Translation:
    """`search` in `dialect` (one of DIALECTS; an unknown one is read as "plain").

    Raises Untranslatable in strict mode when the source would have to leave out a
    constraint (see the module docstring)."""
    losses = _Losses()
    render = _RENDERERS.get(dialect, _plain)
    query, carries_dates = render(search, losses)
    if strict and losses.lost:
        raise Untranslatable("; ".join(losses.lost))
    dates = None if carries_dates else search.dates
    if dates is not None and dialect == "local" and not dates.whole_years:
        losses.note("the library filters by year: the date range was widened to whole years")
    return Translation(
        dialect if dialect in _RENDERERS else "plain", query, tuple(losses.notes), dates
    )


def _tag(name: str | None) -> str:
    return f"[{name}]" if name else ""


def _stem(word: str, losses: _Losses, source: str) -> str:
    if word.endswith("*"):
        losses.note(f"{source} has no truncation: {word} searched as the word {word[:-1]}")
        return word[:-1]
    return word


def _needs_quotes(word: str) -> bool:
    return not _PLAIN_WORD_RE.fullmatch(word)


def _quoted(text: str) -> str:
    return '"' + text.replace('"', " ") + '"'


def _term(word: str) -> str:
    return _quoted(word) if _needs_quotes(word) else word


def _joined(parts: list[str], operator: str) -> str:
    return parts[0] if len(parts) == 1 else "(" + f" {operator} ".join(parts) + ")"


def _boolean(node: Node, clause: Callable[[Clause], str], *, not_word: str = "NOT") -> str:
    """`node` in the infix syntax most sources share: each clause as `clause` renders it,
    groups in parentheses joined by AND / OR, an exclusion as `(a <not_word> b)`."""
    if isinstance(node, Clause):
        return clause(node)
    if isinstance(node, Not):
        include = _boolean(node.include, clause, not_word=not_word)
        return f"({include} {not_word} {_boolean(node.exclude, clause, not_word=not_word)})"
    operator = "OR" if isinstance(node, Or) else "AND"
    return _joined([_boolean(c, clause, not_word=not_word) for c in node.children], operator)


def _bare(text: str) -> str:
    """A top-level expression without its outer parentheses."""
    if text.startswith("(") and text.endswith(")"):
        depth = 0
        for index, char in enumerate(text):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0 and index < len(text) - 1:
                return text
        return text[1:-1]
    return text


# --- PubMed ------------------------------------------------------------------------------


def _pubmed(search: SearchString, losses: _Losses) -> tuple[str, bool]:
    def clause(node: Clause) -> str:
        name = node.field
        if name == "ab":
            losses.note("PubMed has no abstract-only field: [ab] searched as [tiab]")
            name = "tiab"
        text = _quoted(node.text) if node.quoted else node.text
        return f"{text}{_tag(name)}"

    query = _bare(_boolean(search.node, clause))
    if search.dates is not None:
        query = f"({query}) AND {_pubmed_dates(search.dates)}"
    return query, True


def _pubmed_dates(dates: DateRange) -> str:
    start = (dates.start or "1000").replace("-", "/")
    end = (dates.end or str(OPEN_END_YEAR)).replace("-", "/")
    return f"{start}[dp]" if start == end else f"{start}:{end}[dp]"


# --- Europe PMC ---------------------------------------------------------------------------

_EUROPEPMC_FIELDS = {"ti": "TITLE", "ab": "ABSTRACT", "tiab": "TITLE_ABS"}
_EUROPEPMC_NAMES = {"au": "AUTH", "mh": "MESH_HEADING", "pt": "PUB_TYPE"}


def _europepmc_preprints(search: SearchString, losses: _Losses) -> tuple[str, bool]:
    """Europe PMC's syntax for its preprint index (bioRxiv, medRxiv): preprints carry no
    MeSH headings or publication types, so those clauses are searched as words in title and
    abstract, a lost constraint (refused in strict mode), not a clean empty answer."""
    return _europepmc(search, losses, controlled=False)


def _europepmc(
    search: SearchString, losses: _Losses, *, controlled: bool = True
) -> tuple[str, bool]:
    def term(text: str, name: str | None) -> str:
        if name == "tw":
            return f"(TITLE_ABS:{text} OR KW:{text} OR MESH_HEADING:{text})"
        prefix = _EUROPEPMC_FIELDS.get(name or "")
        return f"{prefix}:{text}" if prefix else text

    def clause(node: Clause) -> str:
        if not controlled and node.field in ("mh", "pt"):
            losses.lose(f"[{node.field}] searched as words: preprints have no MeSH or types")
            return f"TITLE_ABS:{_quoted(node.text)}"
        if node.field in _EUROPEPMC_NAMES:
            return f"{_EUROPEPMC_NAMES[node.field]}:{_quoted(node.text)}"
        if node.quoted:
            return term(_quoted(node.text), node.field)
        return _joined([term(_term(word), node.field) for word in node.words], "AND")

    query = _bare(_boolean(search.node, clause))
    if search.dates is not None:
        query = f"({query}) AND {_europepmc_dates(search.dates)}"
    return query, True


def _europepmc_dates(dates: DateRange) -> str:
    if dates.whole_years:
        start, end = dates.years()
        return f"PUB_YEAR:[{start or 1000} TO {end or datetime.now(UTC).year}]"
    first = bound(dates.start, False).isoformat() if dates.start else "1000-01-01"
    last = bound(dates.end, True).isoformat() if dates.end else datetime.now(UTC).date().isoformat()
    return f"FIRST_PDATE:[{first} TO {last}]"


# --- arXiv ---------------------------------------------------------------------------------

_ARXIV_FIELDS = {
    None: ("all",),
    "tw": ("all",),
    "ti": ("ti",),
    "ab": ("abs",),
    "tiab": ("ti", "abs"),
}


def _arxiv(search: SearchString, losses: _Losses) -> tuple[str, bool]:
    def fielded(text: str, name: str | None) -> str:
        prefixes = _ARXIV_FIELDS[name]
        return _joined([f"{prefix}:{text}" for prefix in prefixes], "OR")

    def clause(node: Clause) -> str:
        if node.field == "au":
            surname = node.words[0].strip(",")
            if len(node.words) > 1:
                losses.note(f"arXiv searches authors by surname: {node.text}[au] as au:{surname}")
            return f"au:{_term(surname)}"
        if node.field in VOCABULARY_FIELDS:
            losses.lose(_vocabulary_lost("arXiv", node))
            return fielded(_quoted(node.text), None)
        if node.quoted:
            return fielded(_quoted(node.text), node.field)
        words = [_term(_stem(word, losses, "arXiv's API")) for word in node.words]
        return _joined([fielded(word, node.field) for word in words], "AND")

    return _bare(_boolean(search.node, clause, not_word="ANDNOT")), False


def _vocabulary_lost(source: str, clause: Clause) -> str:
    kind = FIELDS[clause.field or ""]
    return f"{source} has no {kind} field: {clause.text}[{clause.field}] searched as words"


# --- OpenAlex ------------------------------------------------------------------------------


def _openalex(search: SearchString, losses: _Losses) -> tuple[str, bool]:
    def clause(node: Clause) -> str:
        if node.field in ("ti", "ab", "tiab"):
            losses.note(
                "OpenAlex searches title, abstract and full text together: field tags "
                "[ti], [ab], [tiab] widened to all three"
            )
        if node.field == "au":
            losses.lose(f"OpenAlex's search has no author field: {node.text}[au] searched as words")
            return _quoted(node.text)
        if node.field in VOCABULARY_FIELDS:
            losses.lose(_vocabulary_lost("OpenAlex", node))
            return _quoted(node.text)
        if node.quoted:
            return _quoted(node.text)
        words = [_term(_stem(word, losses, "OpenAlex")) for word in node.words]
        return _joined(words, "AND")

    return _bare(_boolean(search.node, clause)), False


# --- Google Scholar -------------------------------------------------------------------------


def _scholar(search: SearchString, losses: _Losses) -> tuple[str, bool]:
    """Scholar has `intitle:`, `author:`, `OR` (binding tighter than the implicit AND)
    and `-` for exclusion, and no parentheses: an OR of groups is flattened to an OR of
    its words, and only single terms (or an OR of them) can be excluded."""

    def clause(node: Clause, *, single: bool) -> str:
        if node.field == "au":
            words = list(node.words)
            if len(words) > 1 and words[-1].isalpha() and len(words[-1]) <= 3:
                words = [words[-1], *words[:-1]]  # PubMed's "Smith J" is Scholar's "J Smith"
            return f"author:{_quoted(' '.join(words))}"
        if node.field in VOCABULARY_FIELDS:
            losses.lose(_vocabulary_lost("Google Scholar", node))
            return _quoted(node.text)
        if node.field in ("tiab", "ab", "tw"):
            losses.note(
                "Google Scholar searches the whole text: [tiab], [ab] and [tw] widened to "
                "all fields"
            )
        prefix = "intitle:" if node.field == "ti" else ""
        if node.quoted or (single and len(node.words) > 1):
            if not node.quoted:
                losses.note(f"Google Scholar cannot OR a group: '{node.text}' searched as a phrase")
            return f"{prefix}{_quoted(node.text)}"
        return " ".join(
            f"{prefix}{_term(_stem(word, losses, 'Google Scholar'))}" for word in node.words
        )

    def simple_terms(node: Node) -> list[Clause]:
        if isinstance(node, Clause):
            return [node]
        if isinstance(node, Or) and all(isinstance(child, Clause) for child in node.children):
            return [child for child in node.children if isinstance(child, Clause)]
        return []

    def words_of(node: Node) -> list[Clause]:
        if isinstance(node, Clause):
            return [node]
        if isinstance(node, Not):
            return words_of(node.include)
        return [clause for child in node.children for clause in words_of(child)]

    def walk(node: Node) -> str:
        if isinstance(node, Clause):
            return clause(node, single=False)
        if isinstance(node, Or):
            if not all(isinstance(child, Clause) for child in node.children):
                losses.note(
                    "Google Scholar has no parentheses: an OR of groups searched as an OR of "
                    "their words"
                )
            return " OR ".join(clause(c, single=True) for c in words_of(node))
        if isinstance(node, Not):
            excluded = simple_terms(node.exclude)
            if not excluded:
                losses.lose(
                    "Google Scholar can exclude single terms only: a NOT group was left out"
                )
                return walk(node.include)
            return " ".join([walk(node.include), *(f"-{clause(c, single=True)}" for c in excluded)])
        return " ".join(walk(child) for child in node.children)

    return walk(search.node), False


# --- the library ------------------------------------------------------------------------------


def _local(search: SearchString, losses: _Losses) -> tuple[str, bool]:
    """The library's query language (papers/search/query.py): words, phrases, prefix*,
    AND/OR/NOT and parentheses over title, abstract, authors, keywords and venue."""

    def clause(node: Clause) -> str:
        if node.field is not None and node.field not in ("tw",):
            losses.note(
                "the library searches title, abstract, authors, keywords and venue "
                "together: field tags widened to all of them"
            )
        if node.field == "au":
            return _term(node.words[0].strip(","))
        if node.quoted or node.field in VOCABULARY_FIELDS:
            return _quoted(node.text) if len(node.words) > 1 else _term(node.text)
        return _joined([_term(word) for word in node.words], "AND")

    return _bare(_boolean(search.node, clause)), False


# --- DBLP -------------------------------------------------------------------------------------


def _dblp(search: SearchString, losses: _Losses) -> tuple[str, bool]:
    """DBLP requires every word of its query (space-separated), reads `a|b` as an OR of
    words and matches each word as a prefix, so truncation is kept (`transl*` is `transl`).
    It has no fields, phrases, parentheses or NOT: a phrase is its words, an OR of phrases
    or groups is an OR of all their words (broader, noted) and NOT parts are left out.
    Sending an OR group as plain words would have DBLP require them all."""

    def clause(node: Clause, *, in_or: bool = False) -> list[str]:
        if node.field in VOCABULARY_FIELDS:
            losses.lose(_vocabulary_lost("DBLP", node))
        elif node.field == "au":
            losses.lose(f"DBLP's search has no author field: {node.text}[au] searched as words")
        elif node.field is not None:
            losses.note("DBLP has no fields: field tags dropped (words searched in all fields)")
        if node.quoted and len(node.words) > 1 and not in_or:
            losses.note(f"DBLP has no phrases: '{node.text}' searched as words")
        return [word.rstrip("*") for word in node.words]

    def words_of(node: Node) -> list[str]:  # an OR group's words, its note said once
        if isinstance(node, Clause):
            return clause(node, in_or=True)
        if isinstance(node, Not):
            losses.lose("DBLP has no NOT: NOT parts left out")
            return words_of(node.include)
        return [word for child in node.children for word in words_of(child)]

    def walk(node: Node) -> str:
        if isinstance(node, Clause):
            return " ".join(clause(node))
        if isinstance(node, Or):
            if not all(isinstance(c, Clause) and len(c.words) == 1 for c in node.children):
                losses.note(
                    "DBLP ORs single words only: an OR of phrases or groups searched as an "
                    "OR of all their words"
                )
            return "|".join(dict.fromkeys(words_of(node)))
        if isinstance(node, Not):
            losses.lose("DBLP has no NOT: NOT parts left out")
            return walk(node.include)
        return " ".join(walk(child) for child in node.children)

    return walk(search.node), False


# --- keywords only --------------------------------------------------------------------------


def _plain(search: SearchString, losses: _Losses) -> tuple[str, bool]:
    """Keywords: the words of every clause a match must or may contain, without booleans,
    fields or truncation; NOT parts are left out."""
    words: list[str] = []

    def walk(node: Node) -> None:
        if isinstance(node, Clause):
            if node.field in VOCABULARY_FIELDS:
                losses.lose(_vocabulary_lost("This source", node))
            elif node.field == "au":
                losses.lose(f"this source has no author field: {node.text}[au] searched as words")
            elif node.field is not None:
                losses.note("keywords only: field tags dropped (words searched in all fields)")
            for word in node.words:
                word = _stem(word, losses, "this source")
                if word.lower() not in (w.lower() for w in words):
                    words.append(word)
            return
        if isinstance(node, Or):
            losses.note("keywords only: OR groups sent as keywords, ranked by relevance")
        if isinstance(node, Not):
            losses.lose("keywords only: NOT parts left out")
            walk(node.include)
            return
        for child in node.children:
            walk(child)

    walk(search.node)
    return " ".join(words), False


_RENDERERS = {
    "pubmed": _pubmed,
    "europepmc": _europepmc,
    "europepmc_preprints": _europepmc_preprints,
    "arxiv": _arxiv,
    "google_scholar": _scholar,
    "openalex": _openalex,
    "dblp": _dblp,
    "local": _local,
    "plain": _plain,
}

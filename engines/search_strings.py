"""Search strings as systematic reviewers write them: the language and its parser
(docs/SEARCH-STRINGS.md). Their translation into each source's syntax is
engines/query_dialects.py.

    ("machine translation"[tiab] OR nmt[tiab]) AND neoplasms[mh] NOT review[pt] AND 2015:2020[dp]

The language is PubMed's: field tags (`[tiab]`, `[ti]`, `[ab]`, `[mh]`, `[au]`, `[pt]`,
`[tw]`, `[dp]` with a date or a range), AND / OR / NOT (upper case) with parentheses,
quoted phrases and truncation (`transl*`). `parse` reads it into a small AST, refusing
what is malformed with InvalidInput naming the position and a fix.

A query is a search string (`is_search_string`) when it has a field tag or a boolean
group (an operator next to a parenthesis) and uses no source's own field prefixes
(`ti:`, `intitle:`, `TITLE:`): everything else is sent to each engine as before.

OR mixed with AND or NOT at one level without parentheses is refused: PubMed reads
operators left to right, the other sources by precedence, so `a OR b AND c` means two
different searches. A date range (`[dp]`) is ANDed with the whole search; sources
whose syntax has none filter by it through the request's date range (`dates_within`).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date

from core.errors import InvalidInput

# --- the language ----------------------------------------------------------------------------

FIELDS: dict[str, str] = {
    "tiab": "title or abstract",
    "ti": "title",
    "ab": "abstract",
    "tw": "text words",
    "mh": "MeSH heading",
    "au": "author",
    "pt": "publication type",
    "dp": "publication date",
}
# PubMed's long names of the same tags.
TAG_ALIASES: dict[str, str] = {
    "title/abstract": "tiab",
    "title": "ti",
    "abstract": "ab",
    "text word": "tw",
    "textword": "tw",
    "mesh": "mh",
    "mesh terms": "mh",
    "mesh term": "mh",
    "author": "au",
    "publication type": "pt",
    "date - publication": "dp",
    "publication date": "dp",
    "pdat": "dp",
}
# Fields whose words name one thing (a person, a heading): never split into words.
NAME_FIELDS = frozenset({"au", "mh", "pt"})
# Controlled vocabulary: a source without it cannot keep the clause's meaning.
VOCABULARY_FIELDS = frozenset({"mh", "pt"})
OPERATORS = ("AND", "OR", "NOT")
# PubMed refuses shorter truncated stems (they expand to too many words).
MIN_TRUNCATION_CHARS = 4
# An open end of a PubMed date range ("2015:3000[dp]").
OPEN_END_YEAR = 3000

_KNOWN_TAGS = "|".join(re.escape(tag) for tag in [*FIELDS, *TAG_ALIASES])
_TAG_RE = re.compile(rf"\[\s*(?:{_KNOWN_TAGS})\s*\]", re.IGNORECASE)
_GROUP_RE = re.compile(r"\)\s*(?:AND|OR|NOT)\b|\b(?:AND|OR|NOT)\s*\(")
# A source's own field syntax: such a query is the user's choice of dialect, sent as typed.
_NATIVE_RE = re.compile(
    r"\b(?:ti|au|abs|all|cat|intitle|allintitle|author|source|TITLE|ABSTRACT|TITLE_ABS|AUTH"
    r"|MESH_HEADING|KW|PUB_YEAR|PUB_TYPE):",
)
_DATE_RE = re.compile(r"(\d{4})(?:[/-](\d{1,2})(?:[/-](\d{1,2}))?)?")
_STEM_RE = re.compile(r"\w+", re.UNICODE)


def is_search_string(text: str) -> bool:
    """Whether `text` is written in this language (a field tag, or an operator next to a
    parenthesis) rather than as a question or in a source's own syntax."""
    if _NATIVE_RE.search(text):
        return False
    return bool(_TAG_RE.search(text) or _GROUP_RE.search(text))


# --- AST -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Clause:
    """Words searched in one field (None: all fields). A run of bare words before one tag
    is one clause (every word must match, each in the field; for a name field the words
    are one name); `quoted`: a phrase. A word may end in `*` (truncation)."""

    words: tuple[str, ...]
    field: str | None = None
    quoted: bool = False

    @property
    def text(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True)
class And:
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Not:
    include: Node
    exclude: Node


Node = Clause | And | Or | Not


@dataclass(frozen=True)
class DateRange:
    """A publication-date range: 'YYYY', 'YYYY-MM' or 'YYYY-MM-DD' ends; None is open."""

    start: str | None
    end: str | None

    def years(self) -> tuple[int | None, int | None]:
        return (
            int(self.start[:4]) if self.start else None,
            int(self.end[:4]) if self.end else None,
        )

    @property
    def whole_years(self) -> bool:
        return all(value is None or len(value) == 4 for value in (self.start, self.end))


@dataclass(frozen=True)
class SearchString:
    text: str
    node: Node
    dates: DateRange | None = None


# --- parsing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Token:
    kind: str  # word | phrase | tag | op | lparen | rparen
    value: str
    at: int  # 1-based character position, for messages


def _invalid(message: str, at: int, hint: str) -> InvalidInput:
    return InvalidInput(f"{message} (at character {at}).", field="query", hint=hint, position=at)


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char.isspace():
            i += 1
        elif char == '"':
            end = text.find('"', i + 1)
            if end < 0:
                raise _invalid(
                    "A quote is opened and never closed", i + 1, 'close it: "heart failure"'
                )
            tokens.append(_Token("phrase", text[i + 1 : end], i + 1))
            i = end + 1
        elif char == "[":
            end = text.find("]", i + 1)
            if end < 0:
                raise _invalid("A field tag is opened and never closed", i + 1, "write [tiab]")
            tokens.append(_Token("tag", text[i + 1 : end], i + 1))
            i = end + 1
        elif char in "()":
            tokens.append(_Token("lparen" if char == "(" else "rparen", char, i + 1))
            i += 1
        elif char == "]":
            raise _invalid("A ']' closes no field tag", i + 1, "write [tiab]")
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in '"()[]':
                j += 1
            word = text[i:j]
            tokens.append(_Token("op" if word in OPERATORS else "word", word, i + 1))
            i = j
    return tokens


@dataclass(frozen=True)
class _Operand:
    op: str | None  # the operator before it (None for the first)
    op_at: int
    at: int
    operand: Node | DateRange


class _Parser:
    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.dates: list[tuple[DateRange, int]] = []

    def peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> _Token:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def group(self, depth: int) -> Node | None:
        """Operands and operators up to the end or the closing parenthesis; None when the
        group held only a date range."""
        operands: list[_Operand] = []
        op: tuple[str, int] | None = None
        while True:
            token = self.peek()
            if token is None or token.kind == "rparen":
                if op is not None:
                    raise _invalid(f"{op[0]} needs a term after it", op[1], "write 'a AND b'")
                break
            if token.kind == "op":
                if op is not None or not operands:
                    raise _invalid(
                        f"{token.value} needs a term before it", token.at, "write 'a AND b'"
                    )
                op = (token.value, token.at)
                self.take()
                continue
            start = token.at
            operand = self.operand(depth)
            if operands and op is None:
                op = ("AND", start)  # terms side by side: AND, as PubMed reads them
            operands.append(_Operand(op[0] if op else None, op[1] if op else start, start, operand))
            op = None
        if not operands:
            return None
        return self.combine(operands, depth)

    def operand(self, depth: int) -> Node | DateRange:
        token = self.take()
        if token.kind == "lparen":
            inner = self.group(depth + 1)
            closing = self.peek()
            if closing is None:
                raise _invalid("A parenthesis is opened and never closed", token.at, "add ')'")
            self.take()
            if inner is None:
                raise _invalid("The parentheses hold no terms", token.at, "put terms inside")
            tag = self.peek()
            if tag is not None and tag.kind == "tag":
                raise _invalid(
                    "A field tag applies to a word or a phrase, not to a group", tag.at,
                    "tag each term inside the parentheses: (a[tiab] OR b[tiab])",
                )  # fmt: skip
            return inner
        if token.kind == "phrase":
            words = tuple(token.value.split())
            if not words:
                raise _invalid("The quotes hold no words", token.at, 'write "heart failure"')
            if any("*" in word for word in words):
                raise _invalid(
                    "Truncation (*) inside a quoted phrase is not supported", token.at,
                    "truncate a single word: transl*",
                )  # fmt: skip
            return self.tagged(words, quoted=True, at=token.at)
        if token.kind == "word":
            run = [token.value]
            while (nxt := self.peek()) is not None and nxt.kind == "word":
                if self._dated(self.pos + 1):
                    break  # 'cancer 2020[dp]': the tag dates only the word before it
                run.append(self.take().value)
            return self.tagged(tuple(run), quoted=False, at=token.at)
        if token.kind == "tag":
            raise _invalid(
                f"The field tag [{token.value}] follows no term", token.at, "write cancer[tiab]"
            )
        raise _invalid("A ')' closes no parenthesis", token.at, "remove it or add '('")

    def _dated(self, index: int) -> bool:
        """Whether the token at `index` is a [dp] tag."""
        if index >= len(self.tokens) or self.tokens[index].kind != "tag":
            return False
        name = " ".join(self.tokens[index].value.lower().split())
        return TAG_ALIASES.get(name, name) == "dp"

    def tagged(self, words: tuple[str, ...], *, quoted: bool, at: int) -> Node | DateRange:
        tag_token = self.peek()
        name: str | None = None
        if tag_token is not None and tag_token.kind == "tag":
            self.take()
            name = _field(tag_token)
        if name == "dp":
            return _date_range(" ".join(words), at)
        for word in words:
            _check_truncation(word, name, at)
        return Clause(words, name, quoted)

    def combine(self, operands: list[_Operand], depth: int) -> Node:
        kinds = {operand.op for operand in operands[1:]}
        if "OR" in kinds and kinds - {"OR"}:
            at = next(o.op_at for o in operands[1:] if o.op != operands[1].op)
            raise _invalid(
                "OR is mixed with AND or NOT without parentheses: PubMed reads them left to "
                "right, other sources by precedence",
                at,
                "group with parentheses: (a OR b) AND c",
            )
        kept: list[tuple[str | None, int, Node]] = []
        for item in operands:
            operand = item.operand
            if not isinstance(operand, DateRange):
                kept.append((item.op, item.op_at, operand))
                continue
            if depth > 0 or item.op not in (None, "AND") or "OR" in kinds:
                raise _invalid(
                    "A date range [dp] filters the whole search: AND it with the rest, "
                    "outside parentheses, OR and NOT",
                    item.at,
                    "write (a OR b) AND 2015:2020[dp]",
                )
            self.dates.append((operand, item.at))
        if not kept:
            raise _invalid(
                "The search has only a date range", 1, "say what to search for: cancer AND 2020[dp]"
            )
        if kept[0][0] == "NOT":  # what came before the NOT was the date range
            raise _invalid("NOT needs a term before it", kept[0][1], "write 'a NOT b'")
        if "OR" in kinds:
            return Or(tuple(node for _, _, node in kept))
        node: Node = kept[0][2]
        for op, _, operand in kept[1:]:
            if op == "NOT":
                node = Not(node, operand)
            else:
                node = And((*node.children, operand) if isinstance(node, And) else (node, operand))
        return node


def _field(token: _Token) -> str:
    name = " ".join(token.value.lower().split())
    name = TAG_ALIASES.get(name, name)
    if name not in FIELDS:
        known = ", ".join(f"[{tag}]" for tag in FIELDS)
        raise _invalid(f"Unknown field tag [{token.value}]", token.at, f"use one of {known}")
    return name


def _check_truncation(word: str, name: str | None, at: int) -> None:
    if "*" not in word:
        return
    stem = word[:-1]
    if not word.endswith("*") or "*" in stem or not _STEM_RE.fullmatch(stem):
        raise _invalid(
            f"'{word}': truncation is a * at the end of a plain word", at, "write transl*"
        )
    if len(stem) < MIN_TRUNCATION_CHARS:
        raise _invalid(
            f"'{word}': truncation needs at least {MIN_TRUNCATION_CHARS} letters before *",
            at,
            "write transl*",
        )
    if name in NAME_FIELDS:
        raise _invalid(f"'{word}': [{name}] takes no truncation", at, "write the whole name")


def _date_range(text: str, at: int) -> DateRange:
    parts = [part.strip() for part in text.split(":")]
    if len(parts) > 2 or not all(parts):
        raise _invalid(
            f"'{text}[dp]' is not a date or a range", at, "write 2015[dp] or 2015:2020[dp]"
        )
    ends = [_date_value(part, at, end=index == 1) for index, part in enumerate(parts)]
    start, end = (ends[0], ends[1]) if len(ends) == 2 else (ends[0], ends[0])
    if end is not None and start is not None and bound(end, True) < bound(start, False):
        raise _invalid(f"The date range '{text}' ends before it starts", at, "write 2015:2020[dp]")
    return DateRange(start, end)


def _date_value(text: str, at: int, *, end: bool) -> str | None:
    match = _DATE_RE.fullmatch(text)
    if not match:
        raise _invalid(f"'{text}' is not a date", at, "write 2015, 2015/06 or 2015/06/30")
    year = int(match[1])
    if end and year >= OPEN_END_YEAR:
        return None
    try:
        if match[3]:
            return date(year, int(match[2]), int(match[3])).isoformat()
        if match[2]:
            return date(year, int(match[2]), 1).isoformat()[:7]
    except ValueError:
        raise _invalid(f"'{text}' is not a date", at, "write 2015, 2015/06 or 2015/06/30") from None
    return f"{year:04d}"


def bound(value: str, end: bool) -> date:
    """The first (or last) day of a 'YYYY' / 'YYYY-MM' / 'YYYY-MM-DD' period."""
    parts = [int(part) for part in value.split("-")]
    year = parts[0]
    month = parts[1] if len(parts) > 1 else (12 if end else 1)
    day = parts[2] if len(parts) > 2 else (calendar.monthrange(year, month)[1] if end else 1)
    return date(year, month, day)


def parse(text: str) -> SearchString:
    """The AST of a search string. Raises InvalidInput naming the position and a fix for
    a malformed one (unclosed quote or parenthesis, an operator without a term, an unknown
    tag, OR mixed with AND/NOT without parentheses, a bad date, a short truncation)."""
    tokens = _tokens(text)
    if not tokens:
        raise _invalid("The search string is empty", 1, "write cancer[tiab]")
    parser = _Parser(tokens)
    node = parser.group(0)
    stray = parser.peek()
    if stray is not None:
        raise _invalid("A ')' closes no parenthesis", stray.at, "remove it or add '('")
    if len(parser.dates) > 1:
        raise _invalid(
            "The search has more than one date range", parser.dates[1][1], "keep one [dp] range"
        )
    if node is None:
        raise _invalid(
            "The search has only a date range", 1, "say what to search for: cancer AND 2020[dp]"
        )
    return SearchString(text, node, parser.dates[0][0] if parser.dates else None)


# --- dates -----------------------------------------------------------------------------------


def dates_within(
    dates: DateRange | None, date_from: str | None, date_to: str | None
) -> tuple[str | None, str | None]:
    """The request's date range narrowed to the search string's: the later start and the
    earlier end. Raises InvalidInput when the two do not overlap."""
    if dates is None:
        return date_from, date_to
    start = _later(date_from, dates.start)
    end = _earlier(date_to, dates.end)
    if start and end and bound(_iso(end), True) < bound(_iso(start), False):
        raise InvalidInput(
            f"The search string's date range ({dates.start or 'any'} to {dates.end or 'now'}) "
            f"and date_from/date_to ({date_from or 'any'} to {date_to or 'now'}) do not overlap.",
            field="query",
        )
    return start, end


def _iso(value: str) -> str:
    return value.replace("/", "-")


def _later(a: str | None, b: str | None) -> str | None:
    if not a or not b:
        return a or b
    return a if bound(_iso(a), False) >= bound(_iso(b), False) else b


def _earlier(a: str | None, b: str | None) -> str | None:
    if not a or not b:
        return a or b
    return a if bound(_iso(a), True) <= bound(_iso(b), True) else b

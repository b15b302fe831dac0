"""LaTeX and text: decoding field values to Unicode, escaping text so that it compiles."""

from __future__ import annotations

import re
from collections.abc import Callable

import pylatexenc.latex2text
from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec

from core.errors import InvalidInput
from papers.identifiers import clean_text

# --- LaTeX to text ----------------------------------------------------------------------


def _decoder() -> LatexNodes2Text:
    context = pylatexenc.latex2text.get_default_latex_context_db()
    context.add_context_category(
        "research-mcp-bibtex",
        prepend=True,
        macros=[
            MacroTextSpec("url", simplify_repl="%s"),
            MacroTextSpec("mbox", simplify_repl="%s"),
            MacroTextSpec("hbox", simplify_repl="%s"),
            MacroTextSpec("text", simplify_repl="%s"),
            MacroTextSpec("textbraceleft", simplify_repl="{"),
            MacroTextSpec("textbraceright", simplify_repl="}"),
            MacroTextSpec("textasciicircum", simplify_repl="^"),
            MacroTextSpec("textasciitilde", simplify_repl="~"),
            MacroTextSpec("TeX", simplify_repl="TeX"),
            MacroTextSpec("LaTeX", simplify_repl="LaTeX"),
            MacroTextSpec("BibTeX", simplify_repl="BibTeX"),
        ],
    )
    # Math stays as written ('$16\times 16$'): there is no faithful plain-text form.
    return LatexNodes2Text(latex_context=context, keep_braced_groups=False, math_mode="verbatim")


_DECODER = _decoder()
_NEEDS_DECODING = re.compile(r"[\\{}$~%&`']|--|[?!]`")
# A bare % or & in a .bib file is almost always meant literally, not as a LaTeX comment.
_BARE_SPECIAL = re.compile(r"(?<!\\)([%&])")


def latex_to_text(value: str) -> str:
    """'Mart{\\'\\i}n' -> 'Martín', 'Tensor{F}low' -> 'TensorFlow'; whitespace collapsed."""
    if not _NEEDS_DECODING.search(value):
        return clean_text(value)
    try:
        return clean_text(_DECODER.latex_to_text(_BARE_SPECIAL.sub(r"\\\1", value)))
    except Exception as error:  # pylatexenc raises its own exception types
        raise InvalidInput(f"Cannot decode LaTeX in {value[:80]!r}: {error}") from None


# --- writing ----------------------------------------------------------------------------

_ESCAPES = {
    "\\": r"\textbackslash{}",
    "{": r"\textbraceleft{}",  # not \{ : BibTeX counts escaped braces too
    "}": r"\textbraceright{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
# TeX ligatures that would turn '--' into '–' or "''" into '”'; an empty group breaks them.
_LIGATURES = re.compile(r"(?<=-)(?=-)|(?<=`)(?=`)|(?<=')(?=')|(?<=[?!])(?=`)")
# Inline math written as '$...$' (no space inside the dollars, no %), kept as math.
_MATH = re.compile(r"\$(?=[^\s$])[^$%]*?(?<=[^\s$])\$")


def latex_escape(text: str) -> str:
    """Text made safe inside a braced BibTeX value; `latex_to_text` gives it back."""
    return _outside_math(text, _escape_plain)


def _outside_math(text: str, transform: Callable[[str], str]) -> str:
    """Apply `transform` to the text between inline-math spans, which are kept as written."""
    out, position = [], 0
    for match in _MATH.finditer(text):
        if _balanced(match.group(0)):
            out.append(transform(text[position : match.start()]))
            out.append(match.group(0))
            position = match.end()
    out.append(transform(text[position:]))
    result = "".join(out)
    if position and latex_to_text(result) != clean_text(text):
        # Dollars that only looked like math ('$5 and $10'): escape them like the rest.
        return transform(text)
    return result


def _escape_plain(text: str) -> str:
    escaped = "".join(_ESCAPES.get(char, char) for char in text)
    return _LIGATURES.sub("{}", escaped)


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def protect_title(title: str) -> str:
    """Escape a title and brace every word holding a capital, so that styles which
    lower-case titles keep 'TensorFlow', 'BERT' and proper nouns as written."""
    return _outside_math(title, _protect_words)


def _protect_words(text: str) -> str:
    words = []
    for word in text.split(" "):
        escaped = _escape_plain(word)
        words.append(f"{{{escaped}}}" if any(c.isupper() for c in word) else escaped)
    return " ".join(words)

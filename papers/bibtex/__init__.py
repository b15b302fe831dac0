"""Reading and writing BibTeX (and biblatex) files.

Reading: bibtexparser 2 splits the file into blocks; `@string` macros and `#`
concatenation are evaluated here because bibtexparser 2.1 only resolves a macro that is a
field's whole value. LaTeX is decoded to Unicode with pylatexenc, names are split with
bibtexparser's own BibTeX name rules. Every entry type is kept, and every field this
module does not map to a paper column is kept under `metadata["bibtex"]`.

Writing: UTF-8 BibTeX whose special characters are escaped so that it compiles, with the
capitalised words of titles protected by braces, and which this module reads back to the
same titles, names, years, venues and identifiers.
"""

from papers.bibtex.latex import latex_escape, latex_to_text, protect_title
from papers.bibtex.reader import read_bibtex, record_from_bibtex
from papers.bibtex.writer import bibtex_entry, bibtex_name, bibtex_type, render_bibtex

__all__ = [
    "bibtex_entry",
    "bibtex_name",
    "bibtex_type",
    "latex_escape",
    "latex_to_text",
    "protect_title",
    "read_bibtex",
    "record_from_bibtex",
    "render_bibtex",
]

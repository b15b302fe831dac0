"""BibTeX field conventions shared by the reader and the writer."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

Warn = Callable[[str, str], None]  # (location, message)

# The splitter logs each block it gives up on; read_bibtex reports those with their key.
logging.getLogger("bibtexparser.splitter").setLevel(logging.ERROR)

# Keys of the entry mapping that are not BibTeX fields.
TYPE_KEY, KEY_KEY, DUPLICATE_KEY = "ENTRYTYPE", "ID", "_duplicate_key"

# Fields whose value is not LaTeX text: decoding would eat `%` (a comment) and `--`.
VERBATIM_FIELDS = {
    "doi", "url", "eprint", "file", "pdf", "biburl", "urldate", "timestamp", "isbn", "issn",
    "year", "date", "month", "eprinttype", "archiveprefix",
    "primaryclass", "eprintclass", "pmid", "pmcid", "openreview",
}  # fmt: skip
# The field that holds the venue, by entry type; other types take journal, then booktitle.
BOOKTITLE_TYPES = {
    "inproceedings", "conference", "incollection", "inbook", "bookinbook", "suppbook",
    "inreference", "suppcollection",
}  # fmt: skip
# The field that names the publisher, by entry type (read in this order, written first).
PUBLISHER_FIELDS = {
    "techreport": ("institution", "publisher", "organization", "school"),
    "report": ("institution", "publisher", "organization", "school"),
    "phdthesis": ("school", "institution", "publisher", "organization"),
    "mastersthesis": ("school", "institution", "publisher", "organization"),
    "thesis": ("institution", "school", "publisher", "organization"),
}
DEFAULT_PUBLISHER_FIELDS = ("publisher", "organization", "institution", "school")
TRUNCATION_MARKERS = {"others", "et al.", "et al", "et. al.", "et.al.", "etal"}

MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
# BibTeX's predefined macros: `month = jan` is the string "January".
PREDEFINED_MACROS = {
    abbr: name
    for abbr, name in zip(
        MONTHS,
        ("January", "February", "March", "April", "May", "June", "July", "August",
         "September", "October", "November", "December"),
        strict=True,
    )
}  # fmt: skip

# A biblatex date: YYYY, YYYY-MM or YYYY-MM-DD.
ISO_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")

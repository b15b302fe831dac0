"""Passages of the fixture PDFs that the passage and quote tests look for."""

from __future__ import annotations

from tests.papers.pdf.builders import FIXTURES

ACL = FIXTURES / "N18-3011.pdf"  # NAACL 2018, two columns, 8 pages


# Page 2 of N18-3011, as the page prints it: 'diﬀerent' (a ligature), 'di-' / 'rected'.
LIGATURE_QUOTE = (
    "The literature graph is a property graph with directed edges. Unlike Resource "
    "Description Framework (RDF) graphs, nodes and edges in property graphs have an "
    "internal structure"
)

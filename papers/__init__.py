"""The paper library: papers and their metadata, search, PDFs, assets, BibTeX, imports/exports.
May import core only; never engines, projects, mcp_endpoint or research_site (docs/LAYERS.md)."""

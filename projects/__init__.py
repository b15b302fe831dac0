"""Projects and membership, the review workflow, and filing papers into projects as they come.
May import engines, papers and core; never mcp_endpoint or research_site (docs/LAYERS.md)."""

"""Search engines (docs/ENGINES.md): BaseSearchEngine, the built-ins, plugins, rate limits, cache.
May import papers and core; never projects, mcp_endpoint or research_site (docs/LAYERS.md)."""

"""Search engines (issue 5): BaseSearchEngine, the built-in engines, plugins, rate limits."""

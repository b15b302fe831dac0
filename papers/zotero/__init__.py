"""Zotero, the researcher's desktop reference manager, as a second home for papers and PDFs.

- `client`: the mcp-zotero-api plugin's REST routes inside a running Zotero (ZOTERO_URL),
  behind the `zotero_*` MCP tools;
- `bbt`: Better BibTeX's JSON-RPC endpoint (ZOTERO_BBT_URL), behind `import_zotero`;
- `selectors` / `services`: what the tools do with them (reads / annotations);
- `imports`: Zotero items (CSL-JSON) as library records;
- `errors`: Zotero's failures as domain errors.

Zotero listens on loopback only and keeps no state of ours, so nothing here touches the
database except `imports`.
"""

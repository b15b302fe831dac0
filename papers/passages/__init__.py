"""The passage index of the library's PDFs: paragraph-sized passages with their
page and line boxes, ranked by search_passages and searched first by find_quote.
docs/EVIDENCE.md explains the pieces."""

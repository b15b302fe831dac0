"""A stored PDF as an HTTP answer: byte ranges, validators and caching for the reader.

The reading page's pdf.js asks for the PDF once, and for ranges of it when the server says
it can serve them (`Accept-Ranges: bytes`): page 1 of a long PDF is then drawn from the
parts it needs (the cross-reference table at the end, page 1's objects) without waiting
for the whole file. Django's FileResponse sends neither ranges nor validators, so this
module adds them:

- `ETag` (size and modification time: a replaced PDF gets a new one) and `Last-Modified`;
  a request whose `If-None-Match` / `If-Modified-Since` still matches gets 304.
- `Range: bytes=a-b` (one range; `a-` and `-n` too) gets 206 with `Content-Range`, unless
  `If-Range` names another version (then the whole file); a range past the end gets 416.
  Several ranges in one request get the whole file, which HTTP allows.
- `Cache-Control: private`: never a shared cache. `no-cache` (the browser revalidates
  every time, so the view's permission check runs each time) unless the URL carries the
  file's current version (`?v=<version>`, as the reading page links it): that URL never
  changes meaning, so the browser keeps it for a day.

What it deliberately does not do: permission checks (the caller's, before this is
called), compression (PDF streams are compressed already, and ranges must count raw
bytes), multipart/byteranges answers.
"""

from __future__ import annotations

import re
from pathlib import Path

from django.http import FileResponse, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.utils.cache import get_conditional_response
from django.utils.http import http_date, parse_http_date_safe, quote_etag

VERSIONED_MAX_AGE = 24 * 3600
RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def pdf_version(path: Path) -> str:
    """The file's version: changes whenever the file is replaced (size or time)."""
    stat = path.stat()
    return f"{stat.st_size:x}-{stat.st_mtime_ns:x}"


def _requested_range(request: HttpRequest, size: int, etag: str, mtime: int) -> range | None:
    """The one byte range asked for (half-open), None for the whole file; raises
    ValueError when the range lies past the file's end (416)."""
    header = request.headers.get("Range", "").strip()
    found = RANGE.match(header.replace(" ", ""))
    if not found or not any(found.groups()):
        return None  # none, several, or not bytes: the whole file
    if_range = request.headers.get("If-Range", "").strip()
    if if_range:
        if if_range.startswith(('"', "W/")):
            if if_range != etag:
                return None
        elif parse_http_date_safe(if_range) != mtime:
            return None
    first, last = found.groups()
    if not first:  # the last n bytes
        start, end = max(0, size - int(last)), size
    else:
        start = int(first)
        end = min(size, int(last) + 1) if last else size
        if last and int(last) < start:
            return None  # invalid: ignored, as RFC 9110 says
    if start >= size or start >= end:
        raise ValueError("unsatisfiable range")
    return range(start, end)


def pdf_file_response(request: HttpRequest, path: Path, *, file_name: str) -> HttpResponseBase:
    """The PDF at `path` (checked by the caller) as 200, 206, 304 or 416; see the module
    docstring."""
    stat = path.stat()
    size, mtime = stat.st_size, int(stat.st_mtime)
    version = pdf_version(path)
    etag = quote_etag(version)
    validators = HttpResponse()
    validators["ETag"] = etag
    validators["Last-Modified"] = http_date(mtime)
    validators["Accept-Ranges"] = "bytes"
    versioned = request.GET.get("v") == version
    validators["Cache-Control"] = (
        f"private, max-age={VERSIONED_MAX_AGE}" if versioned else "private, no-cache"
    )
    conditional = get_conditional_response(
        request, etag=etag, last_modified=mtime, response=validators
    )
    if conditional is not None and conditional is not validators:
        return conditional  # 304 (or 412): the copy the browser holds is current
    try:
        part = _requested_range(request, size, etag, mtime)
    except ValueError:
        refused = HttpResponse(status=416)
        refused["Content-Range"] = f"bytes */{size}"
        return refused
    if part is None:
        response: HttpResponseBase = FileResponse(
            path.open("rb"), content_type="application/pdf", filename=file_name
        )
    else:
        # A range is at most what pdf.js asks for at a time (64 KiB) in practice; read whole.
        with path.open("rb") as file:
            file.seek(part.start)
            body = file.read(len(part))
        response = HttpResponse(body, status=206, content_type="application/pdf")
        response["Content-Range"] = f"bytes {part.start}-{part.stop - 1}/{size}"
    for name in ("ETag", "Last-Modified", "Accept-Ranges", "Cache-Control"):
        response[name] = validators[name]
    return response


def page_image_response(
    request: HttpRequest, path: Path, *, version: str, content_type: str
) -> HttpResponseBase:
    """Page 1's picture (papers.pdf.page_image) as 200 or 304, with the PDF's caching: its
    ETag is `version` (the PDF's sha256 and the width, which name the picture's content),
    and the browser keeps it for a day when the URL carries that version (`?v=`), else it
    revalidates every time."""
    validators = HttpResponse()
    validators["ETag"] = quote_etag(version)
    validators["Cache-Control"] = (
        f"private, max-age={VERSIONED_MAX_AGE}"
        if request.GET.get("v") == version
        else "private, no-cache"
    )
    conditional = get_conditional_response(request, etag=validators["ETag"], response=validators)
    if conditional is not None and conditional is not validators:
        return conditional
    response = HttpResponse(path.read_bytes(), content_type=content_type)
    response["Content-Length"] = str(len(response.content))
    for name in ("ETag", "Cache-Control"):
        response[name] = validators[name]
    return response

"""Asset content behind the internal ASSET_BASE_URL (same layout as ASSETS_DIR)."""

from __future__ import annotations

import logging
import time

import httpx2
from django.conf import settings

from papers.assets.errors import AssetFetchFailed, asset_details, asset_label

logger = logging.getLogger(__name__)

# Same-host redirects followed when fetching from ASSET_BASE_URL (a CDN or a bucket may
# redirect to a canonical path); a redirect to any other host is refused.
MAX_REDIRECTS = 3


def fetch_remote(relative: str, *, paper_id: int, kind: str, name: str) -> bytes:
    """GET the asset from ASSET_BASE_URL: explicit timeout (also on the whole transfer),
    same-host redirects only, at most ASSET_MAX_BYTES. Raises AssetFetchFailed with a
    reason; the URL goes to the log only."""
    details = asset_details(paper_id, kind, name)
    label = asset_label(paper_id, kind, name)

    def failed(reason: str, message: str, **extra: object) -> AssetFetchFailed:
        return AssetFetchFailed(
            f"Cannot fetch {label}: {message}.", reason=reason, **details, **extra
        )

    base_text = settings.ASSET_BASE_URL
    if not base_text:
        raise failed("not_configured", "the asset server is not configured")
    base = httpx2.URL(base_text.rstrip("/") + "/")
    url = base.join(relative)
    timeout = float(settings.ASSET_FETCH_TIMEOUT)
    deadline = time.monotonic() + timeout
    limit = settings.ASSET_MAX_BYTES
    try:
        # trust_env=False: the base URL is internal; proxy variables are for the outside.
        with httpx2.Client(
            timeout=httpx2.Timeout(timeout), follow_redirects=False, trust_env=False
        ) as client:
            for _ in range(MAX_REDIRECTS + 1):
                with client.stream("GET", url) as response:
                    if response.is_redirect:
                        target = url.join(response.headers.get("location", ""))
                        if (target.scheme, target.host, target.port) != (
                            base.scheme,
                            base.host,
                            base.port,
                        ):
                            logger.warning("asset server redirected %s off its host", url)
                            raise failed(
                                "redirect_refused", "the asset server redirected elsewhere"
                            )
                        url = target
                        continue
                    if response.status_code == 404:
                        logger.warning("asset server has no %s (404)", url)
                        raise failed("not_found", "the asset server answered 404", status=404)
                    if response.status_code != 200:
                        status = response.status_code
                        logger.warning("asset server answered %s for %s", status, url)
                        raise failed(
                            "http_error", f"the asset server answered {status}", status=status
                        )
                    declared = response.headers.get("content-length", "")
                    if declared.isdigit() and int(declared) > limit:
                        raise failed("too_large", f"it is larger than {limit} bytes")
                    chunks: list[bytes] = []
                    size = 0
                    for chunk in response.iter_bytes():
                        size += len(chunk)
                        if size > limit:
                            raise failed("too_large", f"it is larger than {limit} bytes")
                        if time.monotonic() > deadline:
                            raise httpx2.ReadTimeout("transfer took too long")
                        chunks.append(chunk)
                    return b"".join(chunks)
            raise failed("too_many_redirects", "the asset server redirected too many times")
    except httpx2.TimeoutException:
        logger.warning("asset fetch timed out after %ss: %s", timeout, url)
        raise failed(
            "timeout", f"the asset server did not answer within {timeout:g} s", retryable=True
        ) from None
    except httpx2.ConnectError:
        logger.warning("cannot connect to the asset server for %s", url)
        raise failed(
            "connection_failed", "the asset server cannot be reached", retryable=True
        ) from None
    except httpx2.HTTPError as error:
        logger.warning("asset fetch of %s failed: %r", url, error)
        raise failed("network_error", "the transfer failed", retryable=True) from None

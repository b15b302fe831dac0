"""An Atom feed per saved search (Django's syndication framework): one entry per run that
found new papers, listing them. The feed's URL carries the search's `feed_token`, so a
feed reader needs no session; a missing or wrong token answers 404, as an unknown search
does (the token is compared in constant time)."""

from __future__ import annotations

import datetime
import hmac

from django.contrib.syndication.views import Feed
from django.http import Http404, HttpRequest
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed
from django.utils.html import escape

from projects.models import SavedSearch, SavedSearchRun
from projects.watch import selectors


class SavedSearchFeed(Feed):
    feed_type = Atom1Feed

    def get_object(self, request: HttpRequest, name: str) -> SavedSearch:  # type: ignore[override]
        # Names are unique within a project, so several searches may share one: the
        # token tells them apart (compared in constant time, one candidate at a time).
        token = request.GET.get("token", "")
        for search in SavedSearch.objects.filter(name__iexact=name):
            if token and hmac.compare_digest(token.encode(), search.feed_token.encode()):
                return search
        raise Http404("No such feed.")

    def title(self, obj: SavedSearch) -> str:
        return f"Saved search: {obj.name}"

    def subtitle(self, obj: SavedSearch) -> str:
        return f"New papers for {obj.query!r}"

    def link(self, obj: SavedSearch) -> str:
        return reverse("admin:projects_savedsearch_change", args=[obj.pk])

    def items(self, obj: SavedSearch) -> list[SavedSearchRun]:
        return list(selectors.search_runs_with_new(obj))

    def item_title(self, item: SavedSearchRun) -> str:
        return f"{item.new} new paper{'s' if item.new != 1 else ''}"

    def item_description(self, item: SavedSearchRun) -> str:
        lines = []
        for paper in selectors.run_new_papers(item):
            year = f" ({paper['year']})" if paper.get("year") else ""
            lines.append(f"<li>{escape(paper['title'])}{year}</li>")
        return f"<ul>{''.join(lines)}</ul>"

    def item_link(self, item: SavedSearchRun) -> str:
        return reverse("admin:projects_savedsearchrun_change", args=[item.pk])

    def item_pubdate(self, item: SavedSearchRun) -> datetime.datetime:
        return item.started_at

    def item_guid(self, item: SavedSearchRun) -> str:
        return f"saved-search-run-{item.pk}"

    item_guid_is_permalink = False

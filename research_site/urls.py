"""URL routes: the home page, the admin (curation UI), the REST API and the MCP endpoint."""

from django.conf import settings
from django.contrib import admin
from django.templatetags.static import static
from django.urls import URLPattern, URLResolver, include, path, re_path
from django.views.generic import RedirectView

from projects.home import alerts_read, home
from projects.invitations import invitation_view
from projects.watch.feeds import SavedSearchFeed
from research_site.admin_login import ThrottledAdminLoginForm

admin.site.site_header = "Research MCP"
admin.site.site_title = "Research MCP"
admin.site.index_title = "Library"
admin.site.login_form = ThrottledAdminLoginForm

urlpatterns: list[URLPattern | URLResolver] = [
    path("", home, name="home"),
    path("admin/", admin.site.urls),
    # The home page's alert inbox and each saved search's Atom feed.
    path("alerts/read", alerts_read, name="alerts_read"),
    path("feeds/saved/<str:name>.atom", SavedSearchFeed(), name="saved_search_feed"),
    # An invite link to a project (projects.members).
    path("invite/<str:token>/", invitation_view, name="project_invitation"),
    # Pages outside the admin (the API docs, a feed) link no icon: browsers ask here.
    path("favicon.ico", RedirectView.as_view(url=static("research_site/favicon.svg"))),
]
if settings.API_ENABLED:
    from research_site.api import api, unknown_endpoint

    urlpatterns += [path("api/", api.urls), re_path(r"^api/", unknown_endpoint)]
if settings.OAUTH_ENABLED:
    from research_site.oauth import urlpatterns as oauth_urlpatterns

    urlpatterns.append(path("", include((oauth_urlpatterns(), "oauth2_provider"))))
urlpatterns.append(path("", include("mcp_endpoint.urls")))
if settings.MCP_READ_ONLY:
    # An add or delete page opened by its address says why it is refused.
    handler403 = "research_site.read_only.permission_denied"

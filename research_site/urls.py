"""URL routes: the admin (curation UI) and the MCP endpoint."""

from django.contrib import admin
from django.urls import include, path

admin.site.site_header = "Research MCP"
admin.site.site_title = "Research MCP"
admin.site.index_title = "Library"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("mcp_endpoint.urls")),
]

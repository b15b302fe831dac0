from django.urls import path

from mcp_endpoint import views

# Both spellings answer directly: MCP clients do not follow redirects on POST.
urlpatterns = [
    path("mcp", views.mcp, name="mcp"),
    path("mcp/", views.mcp),
]

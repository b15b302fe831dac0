"""The invite link's page, `/invite/<token>/`: a signed-in user sees which project and
role the link offers and joins with one button (a CSRF-checked POST); someone signed out
is sent to the sign-in page and back. An unknown, used or expired link says so (404),
the same for each. The membership itself is projects.members' `invitation_accept`."""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from core.errors import NotFound
from projects.members import invitation_accept, invitation_find


@require_http_methods(["GET", "HEAD", "POST"])
def invitation_view(request: HttpRequest, token: str) -> HttpResponse:
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path(), reverse("admin:login"))
    context = {**admin.site.each_context(request), "title": "Invitation"}
    try:
        invitation = invitation_find(token)
    except NotFound as exc:
        return render(
            request, "projects/invitation.html", {**context, "error": exc.message}, status=404
        )
    if request.method == "POST":
        if settings.MCP_READ_ONLY:
            return render(
                request,
                "projects/invitation.html",
                {**context, "error": "This server is read-only: invitations cannot be accepted."},
                status=403,
            )
        invitation_accept(token=token, user=request.user)
        return HttpResponseRedirect(
            reverse("admin:projects_project_change", args=[invitation.project_id])
        )
    return render(request, "projects/invitation.html", {**context, "invitation": invitation})

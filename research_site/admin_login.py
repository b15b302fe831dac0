"""The admin's sign-in form, throttled (`core.throttle`): after too many failed
sign-ins from one address, or for one user name from one address, even the right password
is refused there for a while, with a message saying how long. The user name is counted per
address so that a stranger who reaches the sign-in page cannot lock its owner out."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError

from core import throttle

SCOPE = "login"


class ThrottledAdminLoginForm(AdminAuthenticationForm):
    def clean(self) -> dict[str, Any]:
        username = self.cleaned_data.get("username") or ""
        address = throttle.client_address(self.request)
        keys = [throttle.address_key(address), throttle.user_key(username, address)]
        try:
            throttle.check(SCOPE, keys)
        except throttle.Throttled as exc:
            raise ValidationError(exc.message, code="throttled") from None
        try:
            cleaned = super().clean()
        except ValidationError:
            throttle.record_failure(SCOPE, keys)
            raise
        throttle.clear(SCOPE, keys[1:])
        return cleaned

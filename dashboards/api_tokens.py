"""``/account/tokens/``: a signed-in person's own API tokens: create one (shown this once), see them, revoke one.

The page is the browser's door to ``fleets.personal_tokens`` (the services behind
``/api/v1/tokens/``): the token is stored as its SHA-256 only, so it is on the page
once, in the answer to the form that created it (``Cache-Control: no-store``). Each
person sees and revokes only their own; both forms are POSTs with Django's CSRF check.
"""

from __future__ import annotations

from datetime import UTC, datetime, time
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from common.pages import page_context
from fleets.models import PersonalToken, TokenScope
from fleets.personal_tokens import personal_token_create, personal_token_revoke, personal_tokens_for_user


class CreateForm(forms.Form):
    name = forms.CharField(max_length=100, label="What it is for", help_text="e.g. carbon reporting tool")
    expires_on = forms.DateField(
        required=False, label="Expires on (UTC, optional)", widget=forms.DateInput(attrs={"type": "date"})
    )
    scope = forms.ChoiceField(
        choices=TokenScope.choices, required=False, initial=TokenScope.REPORTS, label="Scope",
        help_text="metrics: GET /metrics only, for a Prometheus scraper",
    )  # fmt: skip

    def clean_scope(self) -> str:
        return self.cleaned_data["scope"] or TokenScope.REPORTS

    def clean_expires_on(self) -> datetime | None:
        day = self.cleaned_data["expires_on"]
        if day is None:
            return None
        expires_at = datetime.combine(day, time(0), tzinfo=UTC)
        if expires_at <= timezone.now():
            raise forms.ValidationError("must be a day in the future")
        return expires_at


class RevokeForm(forms.Form):
    token = forms.ModelChoiceField(queryset=PersonalToken.objects.none(), label="Token")

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["token"]
        assert isinstance(field, forms.ModelChoiceField)  # noqa: S101 - declared above
        field.queryset = personal_tokens_for_user(user=user).filter(revoked_at__isnull=True)


@login_required
def api_tokens_page(request: HttpRequest) -> HttpResponse:
    context = page_context(request, now=timezone.now())
    create, revoke = CreateForm(), RevokeForm(user=request.user)
    issued, issued_scope, revoked, status = None, None, None, 200
    if request.method == "POST" and request.POST.get("action") == "create":
        create = CreateForm(request.POST)
        if create.is_valid():
            data = create.cleaned_data
            row, issued = personal_token_create(
                user=request.user, name=data["name"], expires_at=data["expires_on"], scope=data["scope"]
            )
            issued_scope = row.scope
            create = CreateForm()
        else:
            status = 400
    elif request.method == "POST":
        revoke = RevokeForm(request.POST, user=request.user)
        if revoke.is_valid():
            revoked = revoke.cleaned_data["token"]
            personal_token_revoke(user=request.user, token_id=revoked.pk)
            revoke = RevokeForm(user=request.user)
        else:
            status = 400
    page = {
        **context, "period": None, "section": "api-tokens", "create": create, "revoke": revoke, "issued": issued,
        "issued_scope": issued_scope,
        "revoked": revoked, "tokens": _tokens(request.user),
    }  # fmt: skip
    response = render(request, "dashboards/api_tokens.html", page, status=status)
    if issued:
        response["Cache-Control"] = "no-store"  # the token is shown this once
    return response


def _tokens(user: Any) -> list[dict[str, Any]]:
    now = timezone.now()
    rows = []
    for token in personal_tokens_for_user(user=user):
        expired = token.expires_at is not None and token.expires_at <= now
        state = "revoked" if token.revoked_at else "expired" if expired else "active"
        rows.append({"token": token, "state": state})
    return rows

"""The organization switcher: remembers in the session which of the user's organizations to show."""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from fleets.selectors import organizations_for_user
from fleets.web import SESSION_ORGANIZATION


class SwitchForm(forms.Form):
    organization = forms.IntegerField(min_value=1, max_value=2**63 - 1)
    next = forms.CharField(required=False, max_length=2000)


@login_required
@require_POST
def organization_switch(request: HttpRequest) -> HttpResponse:
    form = SwitchForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest("Choose one of your organizations.")
    chosen = form.cleaned_data["organization"]
    organization = organizations_for_user(user=request.user).filter(pk=chosen).first()
    if organization is None:
        return HttpResponseBadRequest("You are not a member of that organization.")
    request.session[SESSION_ORGANIZATION] = organization.pk
    target = form.cleaned_data["next"] or "/"
    hosts = {request.get_host()}
    safe = url_has_allowed_host_and_scheme(target, allowed_hosts=hosts, require_https=request.is_secure())
    return HttpResponseRedirect(target if safe else "/")

"""The organization switcher: remembers in the session which of the user's organizations to show."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from fleets.selectors import organizations_for_user
from fleets.web import SESSION_ORGANIZATION


@login_required
@require_POST
def organization_switch(request: HttpRequest) -> HttpResponse:
    organization = organizations_for_user(user=request.user).filter(pk=request.POST.get("organization") or 0).first()
    if organization is None:
        return HttpResponseBadRequest("You are not a member of that organization.")
    request.session[SESSION_ORGANIZATION] = organization.pk
    target = request.POST.get("next") or "/"
    hosts = {request.get_host()}
    safe = url_has_allowed_host_and_scheme(target, allowed_hosts=hosts, require_https=request.is_secure())
    return HttpResponseRedirect(target if safe else "/")

"""``/fleet/tokens/``: each node's tokens, and forms to enroll a node, rotate or revoke a token.

Any member reads the page; the ``admin`` and ``engineer`` roles change (others:
403). A node, fleet, site or token of another organization answers 404. The
forms go through the same audited services as ``/api/v1/node-enrollments/`` and
``/api/v1/node-tokens/``; a new token is shown on the answering page once.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from accounting.inputs.nodes import node_enroll_audited, node_token_revoke_audited, node_token_rotate_audited
from common.pages import page_context
from fleets.models import Fleet, Node, NodeCredential, Site
from fleets.permissions import Capability, may_change_page
from fleets.services import NodeRefused


class EnrollForm(forms.Form):
    fleet = forms.ModelChoiceField(queryset=Fleet.objects.none())
    site = forms.ModelChoiceField(queryset=Site.objects.none())
    hostname = forms.CharField(max_length=253)


class RotateForm(forms.Form):
    node = forms.ModelChoiceField(queryset=Node.objects.none())
    revoke_others = forms.BooleanField(required=False, initial=True, label="Revoke its active tokens")


class RevokeForm(forms.Form):
    token = forms.ModelChoiceField(queryset=NodeCredential.objects.none())


def _forms(organization: Any, data: Any = None) -> dict[str, forms.Form]:
    nodes = Node.objects.filter(fleet__organization=organization)
    built = {
        "enroll": EnrollForm(data if data and data.get("action") == "enroll" else None),
        "rotate": RotateForm(data if data and data.get("action") == "rotate" else None),
        "revoke": RevokeForm(data if data and data.get("action") == "revoke" else None),
    }
    built["enroll"].fields["fleet"].queryset = Fleet.objects.filter(organization=organization)  # type: ignore[attr-defined]
    built["enroll"].fields["site"].queryset = Site.objects.filter(organization=organization)  # type: ignore[attr-defined]
    built["rotate"].fields["node"].queryset = nodes.order_by("hostname")  # type: ignore[attr-defined]
    active = NodeCredential.objects.filter(node__in=nodes, revoked_at__isnull=True).select_related("node")
    built["revoke"].fields["token"].queryset = active  # type: ignore[attr-defined]
    return built


_POSTED_IDS = {"enroll": ("fleet", "site"), "rotate": ("node",), "revoke": ("token",)}
_MODELS: dict[str, Any] = {"fleet": Fleet, "site": Site, "node": Node, "token": NodeCredential}
_PATHS = {"fleet": "organization", "site": "organization", "node": "fleet__organization",
          "token": "node__fleet__organization"}  # fmt: skip


def _not_ours(request: HttpRequest, organization: Any) -> bool:
    """A posted id of a row that exists but not in this organization (404: its existence is not revealed)."""
    for name in _POSTED_IDS.get(str(request.POST.get("action")), ()):
        posted = str(request.POST.get(name, ""))
        if posted.isascii() and posted.isdigit():
            rows = _MODELS[name].objects.filter(pk=int(posted))
            if not rows.filter(**{_PATHS[name]: organization}).exists():
                return True
    return False


@login_required
def node_tokens_page(request: HttpRequest) -> HttpResponse:
    context = page_context(request, now=timezone.now())
    organization = context["organization"]
    writable = may_change_page(user=request.user, organization=organization, capability=Capability.NODES)
    built, status, issued = _forms(organization), 200, None
    if request.method == "POST":
        if not writable:
            return HttpResponse("managing nodes and tokens needs the admin or engineer role", status=403)
        if _not_ours(request, organization):
            raise Http404("no such node, fleet, site or token among your organization's")
        built = _forms(organization, request.POST)
        status, issued = _change(request, built)
    nodes = Node.objects.filter(fleet__organization=organization).select_related("fleet", "site").order_by("hostname")
    tokens = NodeCredential.objects.filter(node__in=nodes).order_by("-created_at", "-id")
    page = {**context, "period": None, "section": "tokens", "writable": writable, "forms": built, "issued": issued}
    response = render(request, "accounting/node_tokens.html", page | {"nodes": nodes, "tokens": tokens}, status=status)
    if issued:
        response["Cache-Control"] = "no-store"  # the token is shown this once
    return response


def _change(request: HttpRequest, built: dict[str, forms.Form]) -> tuple[int, dict[str, Any] | None]:
    action = str(request.POST.get("action"))
    form = built.get(action)
    if form is None or not form.is_valid():
        return 400, None
    data, now, user = form.cleaned_data, timezone.now(), request.user
    if action == "revoke":
        revoked = node_token_revoke_audited(user=user, credential=data["token"], now=now)
        return 200, {"revoked": revoked}
    if action == "rotate":
        issued = node_token_rotate_audited(user=user, node=data["node"], revoke_others=data["revoke_others"], now=now)
        return 200, {"token": issued.token, "node": data["node"], "revoked_count": issued.revoked_count}
    try:
        node, issued = node_enroll_audited(
            user=user, fleet=data["fleet"], site=data["site"], hostname=data["hostname"], tenure=None,
            commissioned_at=None, now=now,
        )  # fmt: skip
    except NodeRefused as error:
        form.add_error(None, str(error))
        return 400, None
    return 200, {"token": issued.token, "node": node, "revoked_count": 0}

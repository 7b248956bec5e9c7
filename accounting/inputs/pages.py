"""``/finance/prices/``: each node's rent in force, and a form to change it (admin and finance only).

The form goes through the same service as the API (``node_rent_change``): the
change is audited, refused inside a locked period, and the page says how many
ledger hours it re-opened; the next ledger run recomputes them.

A CSV file of prices is stored as the API's upload is (``upload_store``) and
checked by a worker; the page shows the organization's latest upload and polls
its status URL (``/api/v1/uploads/<id>/``) until it is done.
"""

from __future__ import annotations

from datetime import UTC, datetime, time
from decimal import Decimal
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from accounting.inputs.services import node_rent_change
from accounting.inputs.upload_kinds import NODE_PRICES_UPLOAD
from accounting.inputs.upload_runs import UploadBusy, upload_store, uploads_lapse
from accounting.inputs.uploads import UPLOAD_MAX_BYTES, UploadInvalid
from accounting.inputs.uploads_api import upload_enqueue, upload_status_url
from accounting.models import InputUpload, LedgerPending, NodePrice
from accounting.tasks import node_prices_upload_task
from common.api import InputInvalid
from common.currencies import currency_problem
from common.pages import page_context
from fleets.models import Node
from fleets.permissions import Capability, may_change_page
from governance.locks import PeriodLocked


class RentForm(forms.Form):
    node = forms.ModelChoiceField(queryset=Node.objects.none())
    rate_per_h = forms.DecimalField(label="Rent per hour", min_value=Decimal(0), max_digits=14, decimal_places=6)
    rate_per = forms.ChoiceField(label="per", choices=NodePrice.RatePer.choices, initial=NodePrice.RatePer.GPU)
    valid_from = forms.DateField(label="From (UTC, start of day)", widget=forms.DateInput(attrs={"type": "date"}))
    currency = forms.CharField(
        label="Currency", required=False, max_length=3,
        help_text="ISO 4217; empty: the node's current price's currency, else its site's",
        widget=forms.TextInput(attrs={"placeholder": "current price's, else site's", "size": 8}),
    )  # fmt: skip

    def __init__(self, *args: Any, nodes: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["node"].queryset = nodes  # type: ignore[attr-defined]

    def clean_currency(self) -> str | None:
        """The one list of codes (``common.currencies``); empty: ``None``, the service's default."""
        code = str(self.cleaned_data.get("currency") or "").strip().upper()
        if code and (problem := currency_problem(code)):
            raise forms.ValidationError(problem)
        return code or None


def _rows(nodes: Any, now: datetime) -> list[dict[str, Any]]:
    """Each node's own price in force, else the fleet default it falls back to (as the ledger does), and its
    hours awaiting recomputation."""
    in_force = NodePrice.objects.exclude(valid_to__lte=now).filter(valid_from__lte=now).order_by("valid_from")
    own = {price.node_id: price for price in in_force.filter(node__in=nodes)}
    fleets = {node.fleet_id for node in nodes}
    defaults = {price.fleet_id: price for price in in_force.filter(fleet_id__in=fleets, node__isnull=True)}
    marks = LedgerPending.objects.filter(node__in=nodes).values("node_id").annotate(hours=Count("node_id"))
    pending = {mark["node_id"]: mark["hours"] for mark in marks}
    return [
        {
            "node": node,
            "price": own.get(node.pk),
            "fleet_default": defaults.get(node.fleet_id),
            "pending_h": pending.get(node.pk, 0),
        }
        for node in nodes
    ]


@login_required
def node_prices_page(request: HttpRequest) -> HttpResponse:
    context = page_context(request, now=timezone.now())
    organization = context["organization"]
    nodes = Node.objects.filter(fleet__organization=organization).select_related("fleet", "site").order_by("hostname")
    writable = may_change_page(user=request.user, organization=organization, capability=Capability.PRICES)
    form, status, result = RentForm(nodes=nodes), 200, None
    if request.method == "POST":
        if not writable:
            return HttpResponse("changing prices needs the admin or finance role", status=403)
        posted_file = request.FILES.get("file")
        if posted_file is not None:
            status, refused = _upload(request, organization, posted_file)
            return _render(request, context, form, nodes, status=status, upload_error=refused)
        posted = str(request.POST.get("node", ""))
        # Another organization's node id: 404 (its existence not revealed); junk is the form's 400 (never a 500).
        if posted.isascii() and posted.isdigit() and not nodes.filter(pk=int(posted)).exists():
            raise Http404("no such node among your organization's")
        form = RentForm(request.POST, nodes=nodes)
        status, result = _change(request, form)
    return _render(request, context, form, nodes, status=status, result=result)


def _render(request: HttpRequest, context: dict[str, Any], form: RentForm, nodes: Any, **shown: Any) -> HttpResponse:
    organization, status = context["organization"], shown.pop("status")
    writable = may_change_page(user=request.user, organization=organization, capability=Capability.PRICES)
    page = {**context, "period": None, "section": "prices", "writable": writable, "form": form, "result": None}
    page |= {"upload": _latest_upload(organization), "upload_max_bytes": UPLOAD_MAX_BYTES, "upload_error": ""}
    page |= shown | {"rows": _rows(nodes, timezone.now())}
    return render(request, "accounting/node_prices.html", page, status=status)


def _latest_upload(organization: Any) -> dict[str, Any] | None:
    if organization is None:
        return None
    uploads_lapse(organization_id=organization.pk, now=timezone.now())
    uploads = InputUpload.objects.filter(organization=organization, kind=InputUpload.Kind.NODE_PRICES)
    upload = uploads.order_by("-created_at", "-id").first()
    return None if upload is None else {"row": upload, "status_url": upload_status_url(upload.pk)}


def _upload(request: HttpRequest, organization: Any, upload: Any) -> tuple[int, str]:
    """Store the posted CSV for a worker (as the API does); (status, why it was refused)."""
    if upload.size is not None and upload.size > UPLOAD_MAX_BYTES:
        return 400, f"files are limited to {UPLOAD_MAX_BYTES} bytes"
    try:
        stored = upload_store(organization=organization, user=request.user, spec=NODE_PRICES_UPLOAD,
                              file_name=upload.name or "", content=upload.read(), now=timezone.now())  # fmt: skip
    except UploadInvalid as error:
        return 400, str(error)
    except UploadBusy as error:
        return 409, str(error)
    upload_enqueue(task=node_prices_upload_task, upload_id=stored.pk)
    return 202, ""


def _change(request: HttpRequest, form: RentForm) -> tuple[int, dict[str, Any] | None]:
    if not form.is_valid():
        return 400, None
    data = form.cleaned_data
    valid_from = datetime.combine(data["valid_from"], time(0), tzinfo=UTC)
    try:
        reopened = node_rent_change(
            node=data["node"], rate_per_h=data["rate_per_h"], rate_per=data["rate_per"], valid_from=valid_from,
            currency=data["currency"], user=request.user, now=timezone.now(),
        )  # fmt: skip
    except InputInvalid as error:
        form.add_error(None, str(error))
        return 400, None
    except PeriodLocked as error:
        form.add_error(None, str(error))
        return 409, None
    return 200, {"node": data["node"], "reopened": reopened}

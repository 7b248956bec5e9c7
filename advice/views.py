"""``/advice/``: the organization's workload classes, their placement advice explained, and a form to add one.

Anyone in the organization reads; the admin and engineer roles add classes (the
same service and audit as the API). A new class's advice is computed by a
refresh queued once the class is saved (and hourly after that).
"""

from __future__ import annotations

from datetime import timedelta
from functools import partial
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from advice.charts import load_curve_figure
from advice.models import Advice, AdviceRefresh, AdviceSettings, WorkloadClass
from advice.services import ClassInvalid, advice_settings, workload_class_save
from advice.tasks import advice_refresh_task
from common.charts import figure_html, organization_fleet_colours
from common.pages import page_context
from fleets.permissions import Capability, may_change_page
from reports.curves import load_curves


class WorkloadClassForm(forms.ModelForm):
    class Meta:
        model = WorkloadClass
        fields = ["name", "llm_model", "ttft_target_ms", "ttft_percentile", "deadline_h",
                  "expected_output_tokens_per_day", "carbon_weight"]  # fmt: skip
        labels = {"expected_output_tokens_per_day": "Output tokens per day"}


def _rows(classes: list[WorkloadClass]) -> list[dict[str, Any]]:
    latest: dict[int, Advice] = {}
    for advice in Advice.objects.filter(workload_class__in=classes).order_by("workload_class", "-created_at", "-id"):
        latest.setdefault(advice.workload_class_id, advice)
    return [
        {"cls": c, "advice": latest.get(c.pk), "result": getattr(latest.get(c.pk), "result", None)} for c in classes
    ]


@login_required
def advice_page(request: HttpRequest) -> HttpResponse:
    context = page_context(request, now=timezone.now())
    organization = context["organization"]
    writable = may_change_page(user=request.user, organization=organization, capability=Capability.WORKLOADS)
    form, status, added = WorkloadClassForm(), 200, None
    if request.method == "POST":
        if not writable:
            return HttpResponse("defining workload classes needs the admin or engineer role", status=403)
        form = WorkloadClassForm(request.POST)
        status, added = _add(request, form, organization)
    classes = list(WorkloadClass.objects.filter(organization=organization)) if organization else []
    options = advice_settings(organization_id=organization.pk) if organization else None
    page = {**context, "period": None, "section": "advice", "writable": writable, "form": form, "added": added,
            "rows": _rows(classes), "options": options, "chart": _chart(organization, options),
            "refresh": AdviceRefresh.objects.filter(organization=organization).first() if organization else None,
            }  # fmt: skip
    return render(request, "advice/advice.html", page, status=status)


def _chart(organization: Any, options: AdviceSettings | None) -> str | None:
    """The organization's measured curves (the refresh's history) as a figure; None without any."""
    if organization is None or options is None:
        return None
    end = timezone.now().replace(minute=0, second=0, microsecond=0)
    curves = load_curves(organization_ids=[organization.pk], start=end - timedelta(days=options.curve_days), end=end)
    if not curves:
        return None
    figure = load_curve_figure(curves, percentile=99, colours=organization_fleet_colours(organization))
    return figure_html(figure, div_id="load-curves-chart")


def _add(request: HttpRequest, form: WorkloadClassForm, organization: Any) -> tuple[int, WorkloadClass | None]:
    if not form.is_valid():
        return 400, None
    data = {name: form.cleaned_data[name] for name in form.Meta.fields}
    try:
        added = workload_class_save(
            workload_class=WorkloadClass(organization=organization), data=data, user=request.user, now=timezone.now()
        )
    except ClassInvalid as error:
        for field, messages in error.errors.items():
            form.add_error(field if field in form.fields else None, messages)
        return 400, None
    transaction.on_commit(partial(advice_refresh_task.delay, organization_id=organization.pk))
    return 200, added

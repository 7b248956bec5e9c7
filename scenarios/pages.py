"""``/scenarios/``: an organization's scenarios, a form to create one, and each one's run and result.

The form and the run button go through the same services as the API
(``scenario_create``, ``scenario_run_claim``); a scenario page refreshes itself
while its run is queued or running, showing the progress the task stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, time
from decimal import Decimal, InvalidOperation
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from accounting.templatetags.ledger import money, number, unit
from common.pages import page_context
from fleets.models import Fleet, Site
from fleets.selectors import organizations_for_user
from scenarios.changes import Kind
from scenarios.models import Scenario
from scenarios.result import FIGURES
from scenarios.services import (
    ScenarioInvalid,
    scenario_create,
    scenario_run_claim,
    scenarios_lapse,
    workload_classes,
)
from scenarios.tasks import scenario_run_enqueue

# The form's fields that each kind of change reads (``fleet`` is every kind's; routing's source fleet).
KIND_FIELDS = {
    Kind.NODES: ("gpu_model", "nodes"),
    Kind.LIFETIME: ("extra_years", "purchase_price_per_gpu", "prior_use_years"),
    Kind.MOVE: ("zone", "price_per_kwh", "pue", "site"),
    Kind.TENURE: ("mode", "rate_per_gpu_h", "includes_power", "capex_per_gpu", "lifetime_years", "opex_per_gpu_h"),
    Kind.ROUTING: ("llm_model", "workload_class", "to_fleet", "share"),
}
TENURE_FIELDS = {
    "rent": ("rate_per_gpu_h", "includes_power"),
    "own": ("capex_per_gpu", "lifetime_years", "opex_per_gpu_h"),
}
KIND_LABELS = {
    Kind.NODES: "Add or remove nodes",
    Kind.LIFETIME: "Keep the cards longer (lifetime)",
    Kind.MOVE: "Move: grid zone, tariff, PUE or the site's taxes",
    Kind.TENURE: "Rent instead of own, or the reverse",
    Kind.ROUTING: "Route a share of an LLM model's output to another fleet",
}


def _number(**options: Any) -> forms.DecimalField:
    return forms.DecimalField(required=False, min_value=Decimal(0), max_digits=14, decimal_places=6, **options)


class ScenarioForm(forms.Form):
    name = forms.CharField(max_length=200)
    start = forms.DateField(label="From (UTC, start of day)", widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(label="To (UTC, exclusive)", widget=forms.DateInput(attrs={"type": "date"}))
    kind = forms.ChoiceField(label="Change", choices=[(k.value, label) for k, label in KIND_LABELS.items()])
    fleet = forms.ModelChoiceField(queryset=Fleet.objects.none(), label="Fleet (routing: from)")
    gpu_model = forms.CharField(required=False, label="GPU model (profile key)", max_length=64)
    nodes = forms.IntegerField(required=False, label="Nodes (+ add, - remove)")
    extra_years = _number(label="Extra years")
    purchase_price_per_gpu = _number(label="Second-hand price per card")
    prior_use_years = _number(label="Second-hand: years used before")
    zone = forms.CharField(required=False, max_length=64, label="Grid zone")
    price_per_kwh = _number(label="Tariff per kWh")
    pue = _number(label="PUE")
    site = forms.ModelChoiceField(queryset=Site.objects.none(), required=False, label="Taxes of site")
    mode = forms.ChoiceField(required=False, choices=[("rent", "rent"), ("own", "own")], label="Mode")
    rate_per_gpu_h = _number(label="Rent per GPU-hour")
    includes_power = forms.BooleanField(required=False, label="Rent includes power")
    capex_per_gpu = _number(label="Purchase price per card")
    lifetime_years = _number(label="Depreciation years")
    opex_per_gpu_h = _number(label="Opex per GPU-hour")
    llm_model = forms.CharField(required=False, max_length=256, label="LLM model")
    workload_class = forms.ChoiceField(required=False, label="or a workload class (its model)")
    to_fleet = forms.ModelChoiceField(queryset=Fleet.objects.none(), required=False, label="To fleet")
    share = forms.DecimalField(required=False, min_value=Decimal(0), max_value=Decimal(1), label="Share (0-1)")

    def __init__(self, *args: Any, fleets: Any, sites: Any, classes: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["fleet"].queryset = fleets  # type: ignore[attr-defined]
        self.fields["site"].queryset = sites  # type: ignore[attr-defined]
        self.fields["to_fleet"].queryset = fleets  # type: ignore[attr-defined]
        self.fields["workload_class"].choices = [("", "—"), *((name, name) for name in classes)]  # type: ignore[attr-defined]

    def common_fields(self) -> list[Any]:
        return [self[name] for name in ("name", "start", "end", "kind", "fleet")]

    def kind_fields(self) -> list[tuple[str, str, list[Any]]]:
        """(kind, label, its bound fields), for the form's fieldsets."""
        return [(k.value, label, [self[name] for name in KIND_FIELDS[k]]) for k, label in KIND_LABELS.items()]

    def change(self) -> dict[str, Any]:
        """The one change the form describes, as the API takes it."""
        data, kind = self.cleaned_data, Kind(self.cleaned_data["kind"])
        names = KIND_FIELDS[kind]
        if kind is Kind.TENURE:
            names = ("mode", *TENURE_FIELDS.get(data.get("mode") or "rent", ()))
        change: dict[str, Any] = {
            "kind": kind.value,
            "from_fleet" if kind is Kind.ROUTING else "fleet": data["fleet"].pk,
        }
        for name in names:
            value = data.get(name)
            if isinstance(value, Fleet | Site):
                value = value.pk
            if isinstance(value, Decimal):
                value = str(value)
            if value not in (None, "") or name == "includes_power":
                change[name] = value
        return change


def _scoped(request: HttpRequest, scenario_id: int) -> Scenario:
    found = Scenario.objects.filter(pk=scenario_id, organization__in=organizations_for_user(user=request.user))
    scenarios_lapse(scenarios=found, now=timezone.now())  # a run whose worker died shows failed, with the reason
    scenario = found.select_related("organization", "created_by").first()
    if scenario is None:
        raise Http404("no such scenario among your organizations'")
    return scenario


@login_required
def scenarios_page(request: HttpRequest) -> HttpResponse:
    context = page_context(request, now=timezone.now())
    organization = context["organization"]
    fleets = Fleet.objects.filter(organization=organization).order_by("name")
    sites = Site.objects.filter(organization=organization).order_by("name")
    classes = [spec.name for spec in workload_classes(organization=organization)] if organization else []
    form, status, error = ScenarioForm(fleets=fleets, sites=sites, classes=classes, initial={"mode": "rent"}), 200, None
    if request.method == "POST" and organization is not None:
        form = ScenarioForm(request.POST, fleets=fleets, sites=sites, classes=classes)
        if form.is_valid():
            try:
                scenario = _create(request, form, organization)
            except ScenarioInvalid as invalid:
                error = str(invalid)
            else:
                return redirect("scenario-page", scenario_id=scenario.pk)
        status = 400
    scenarios = Scenario.objects.filter(organization=organization).order_by("-created_at", "-id")
    scenarios_lapse(scenarios=scenarios, now=timezone.now())  # runs whose worker died are listed failed
    scenarios = scenarios[:100]
    page = {**context, "period": None, "section": "scenarios", "form": form, "error": error, "scenarios": scenarios}
    return render(request, "scenarios/scenarios.html", page, status=status)


def _create(request: HttpRequest, form: ScenarioForm, organization: Any) -> Scenario:
    data = form.cleaned_data
    return scenario_create(
        organization=organization,
        user=request.user,
        name=data["name"],
        period_start=datetime.combine(data["start"], time(0), tzinfo=UTC),
        period_end=datetime.combine(data["end"], time(0), tzinfo=UTC),
        changes=[form.change()],
    )


@login_required
def scenario_page(request: HttpRequest, scenario_id: int) -> HttpResponse:
    scenario = _scoped(request, scenario_id)
    context = page_context(request, now=timezone.now())
    running = scenario.status in (Scenario.Status.QUEUED, Scenario.Status.RUNNING)
    page = {**context, "period": None, "section": "scenarios", "scenario": scenario, "running": running}
    page["changes"] = _changes_shown(scenario)
    return render(request, "scenarios/scenario.html", page | _result_tables(scenario.result))


def _changes_shown(scenario: Scenario) -> list[tuple[str, str]]:
    """Each change's kind and its fields as text, fleets and sites by name."""
    fleets = dict(Fleet.objects.filter(organization=scenario.organization_id).values_list("id", "name"))
    sites = dict(Site.objects.filter(organization=scenario.organization_id).values_list("id", "name"))
    names: dict[str, dict[int, str]] = {"fleet": fleets, "from_fleet": fleets, "to_fleet": fleets, "site": sites}
    shown = []
    for change in scenario.changes:
        # In the form's order, not the stored one: PostgreSQL's jsonb keeps an object's keys in an order of its own.
        order = ("fleet", "from_fleet", *KIND_FIELDS.get(change["kind"], ()))
        keys = sorted(
            (key for key in change if key != "kind"),
            key=lambda k: (k not in order, order.index(k) if k in order else 0, k),
        )
        fields = [f"{key} = {names.get(key, {}).get(change[key], change[key])}" for key in keys]
        shown.append((KIND_LABELS.get(change["kind"], change["kind"]), "; ".join(fields)))
    return shown


@login_required
@require_POST
def scenario_run_page(request: HttpRequest, scenario_id: int) -> HttpResponse:
    scenario = _scoped(request, scenario_id)
    if scenario_run_claim(scenario_id=scenario.pk, now=timezone.now()):
        scenario_run_enqueue(scenario_id=scenario.pk)
    return redirect("scenario-page", scenario_id=scenario.pk)


def _result_tables(result: dict[str, Any] | None) -> dict[str, Any]:
    """The result's figures as table rows: label, actual, scenario, change (%), and why a side's figure is not
    stated (a carbon figure per token withheld, "" otherwise), each shown as every page shows its kind (the
    ledger's display filters): money in the currency, counts with thousands separators."""
    if not result:
        return {"rows": None}
    total, currency = result["total"], result.get("currency") or "USD"
    actual, scenario = total["actual"], total["scenario"]
    rows = [
        (key, label, *_pair(key, actual.get(key), scenario.get(key), currency), _withheld(actual, key),
         _withheld(scenario, key))
        for key, label in FIGURES
    ]  # fmt: skip
    return {"rows": rows, "result": result}


def _withheld(figures: dict[str, Any], key: str) -> str:
    """Why the side's figure is withheld (``scenarios.result.CarbonBasis.withheld``); "" where it is not."""
    return str((figures.get("carbon_per_token_withheld") or {}).get(key, ""))


def _pair(key: str, actual: Any, scenario: Any, currency: str) -> tuple[str, str, str]:
    return _shown(key, actual, currency), _shown(key, scenario, currency), _change_pct(actual, scenario)


_MONEY = {"cost", "yearly_cost"}
_COUNTS = {"output_tokens", "yearly_output_tokens"}
_MONEY_PER_UNIT = {"cost_per_1m_output_tokens"}


def _shown(key: str, value: Any, currency: str) -> str:
    if value is None:
        return "—"
    if isinstance(value, list):  # the embodied range, low to high
        return f"{unit(value[0])} to {unit(value[1])}"
    if key in _MONEY:
        return money(value, currency)
    if key in _COUNTS:
        return number(value, 0)
    return unit(value, currency if key in _MONEY_PER_UNIT else "")


def _change_pct(actual: Any, scenario: Any) -> str:
    try:
        before, after = Decimal(str(actual)), Decimal(str(scenario))
    except (InvalidOperation, TypeError):
        return ""
    if before == 0:
        return ""
    return f"{(after - before) / before * 100:+.1f} %"

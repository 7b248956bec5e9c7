"""``/api/v1/node-prices/``, ``/api/v1/site-tariffs/``, ``/api/v1/sites/<id>/pue/``, ``/api/v1/gpu-assets/``.

(Dated PUE and market factors: ``accounting.inputs.site_api``; nodes and tokens: ``accounting.inputs.nodes_api``.)

Authentication as the reports: a personal token (``Bearer wlp_...``) or a
browser session. Any member reads; the ``admin`` and ``finance`` roles write
(others: 403, ``fleets.permissions``). A row of an organization the user does
not belong to answers 404. Every write answers with the row and
``ledger_hours_reopened``, the stored ledger hours it marked for recomputation.
A refused write changes nothing: 400 with the reason (an invalid field, an
overlapping validity period), 409 when it would alter a locked period.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from accounting.inputs.services import InputChange, gpu_asset_save, node_price_save, site_pue_update, site_tariff_save
from accounting.models import GpuAsset, NodePrice, SiteTariff
from common.api import ERRORS, InputView, OrganizationRowSerializer, owned, validated
from common.currencies import CURRENCY_CODES, currency_problem
from fleets.permissions import Capability, change_check
from fleets.selectors import fleets_for_user, gpus_for_user, nodes_for_user, organizations_for_user, sites_for_user


def written(output: type[serializers.Serializer], change: InputChange, created: bool = False) -> Response:
    data = dict(output(change.obj).data) | {"ledger_hours_reopened": change.ledger_hours_reopened}
    return Response(data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


def _reopened() -> serializers.IntegerField:
    return serializers.IntegerField(help_text="stored ledger hours marked for recomputation by this change")


def _money(**options: Any) -> serializers.DecimalField:
    return serializers.DecimalField(max_digits=14, decimal_places=6, min_value=0, **options)


@extend_schema_field({"type": "string", "enum": list(CURRENCY_CODES)})
class CurrencyField(serializers.CharField):
    """An ISO 4217 code of the one list (``common.currencies``): anything else is refused, naming the field.
    The schema lists the codes, so that a client (and the schema check) knows which are accepted."""

    def __init__(self, **options: Any) -> None:
        super().__init__(max_length=3, **options)

    def to_internal_value(self, data: Any) -> str:
        code = super().to_internal_value(data)
        if code and (problem := currency_problem(code)):
            raise serializers.ValidationError(problem)
        return code


@extend_schema_field({"type": "string", "enum": ["", *CURRENCY_CODES]})
class OptionalCurrencyField(CurrencyField):
    """A ``CurrencyField`` that may be blank (none chosen)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(allow_blank=True, **options)


# --- node prices -------------------------------------------------------------------


class NodePriceInputSerializer(serializers.Serializer):
    fleet = serializers.IntegerField(help_text="create only: the fleet the price belongs to")
    node = serializers.IntegerField(required=False, allow_null=True, help_text="create only; empty: fleet default")
    kind = serializers.ChoiceField(choices=NodePrice.Kind.choices)
    rate_per_h = _money(required=False, allow_null=True, help_text="rent per hour (rented), in currency")
    rate_per = serializers.ChoiceField(choices=NodePrice.RatePer.choices, required=False)
    includes_power = serializers.BooleanField(required=False)
    prices_include_vat = serializers.BooleanField(
        required=False, help_text="the amounts include VAT (gross), made net at the site's VAT; default false (net)"
    )
    capex = _money(required=False, allow_null=True, help_text="purchase price (owned)")
    lifetime_years = serializers.DecimalField(
        max_digits=5, decimal_places=2, min_value=Decimal("0.1"), required=False, allow_null=True,
        help_text="depreciation lifetime (owned)",
    )  # fmt: skip
    opex_per_h = _money(required=False)
    currency = OptionalCurrencyField(
        required=False,
        help_text="ISO 4217 code of the rent, purchase price and running cost; blank: the site's currency",
    )  # fmt: skip
    in_service_at = serializers.DateTimeField(
        required=False, allow_null=True,
        help_text="owned: depreciation begins; empty: the node's commissioning, or valid_from if later",
    )  # fmt: skip
    salvage_value = _money(required=False, help_text="owned: residual value, never depreciated (at most capex)")
    depreciation_method = serializers.ChoiceField(
        choices=NodePrice.Method.choices, required=False, help_text="owned: straight line by month (default) or hour"
    )
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(required=False, allow_null=True, help_text="exclusive; empty: in force")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        salvage, capex = attrs.get("salvage_value"), attrs.get("capex")
        if salvage is not None and capex is not None and salvage > capex:
            raise ValidationError({"salvage_value": "must not be above the purchase price (capex)"})
        return attrs


class NodePriceOutputSerializer(OrganizationRowSerializer):
    organization_id = serializers.IntegerField(source="fleet.organization_id")
    fleet_id = serializers.IntegerField()
    node_id = serializers.IntegerField(allow_null=True)
    kind = serializers.CharField()
    rate_per_h = serializers.DecimalField(max_digits=14, decimal_places=6, allow_null=True)
    rate_per = serializers.CharField()
    includes_power = serializers.BooleanField()
    prices_include_vat = serializers.BooleanField()
    capex = serializers.DecimalField(max_digits=14, decimal_places=6, allow_null=True)
    lifetime_years = serializers.DecimalField(max_digits=5, decimal_places=2, allow_null=True)
    opex_per_h = serializers.DecimalField(max_digits=14, decimal_places=6)
    currency = serializers.CharField(help_text="the price's currency; blank: the site's")
    in_service_at = serializers.DateTimeField(allow_null=True)
    salvage_value = serializers.DecimalField(max_digits=14, decimal_places=6)
    depreciation_method = serializers.CharField()
    life_changes = serializers.JSONField(help_text="changes of useful life, prospective: [{from, lifetime_years}]")
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(allow_null=True)


class NodePriceWrittenSerializer(NodePriceOutputSerializer):
    ledger_hours_reopened = _reopened()


def node_prices_for_user(*, user: Any) -> QuerySet[NodePrice]:
    return NodePrice.objects.filter(fleet__organization__in=organizations_for_user(user=user)).select_related("fleet")


def node_price_new(*, user: Any, fleet_id: int, node_id: int | None) -> NodePrice:
    """An unsaved price for a fleet (and node) of the user's; 404 for one not theirs, 403 for the role."""
    fleet = owned(fleets_for_user(user=user), fleet_id, "fleet")
    change_check(user=user, organization=fleet.organization_id, capability=Capability.PRICES)
    node = None if node_id is None else owned(nodes_for_user(user=user), node_id, "node")
    return NodePrice(fleet=fleet, node=node)


class NodePricesView(InputView):
    @extend_schema(operation_id="node_prices_list", responses={200: NodePriceOutputSerializer(many=True), **ERRORS})
    def get(self, request: Request) -> Response:
        return Response(NodePriceOutputSerializer(node_prices_for_user(user=request.user), many=True).data)

    @extend_schema(
        operation_id="node_prices_create",
        summary="A node's (or a fleet's default) rent, or owned cost and depreciation, from valid_from",
        request=NodePriceInputSerializer, responses={201: NodePriceWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def post(self, request: Request) -> Response:
        data = validated(NodePriceInputSerializer, request)
        price = node_price_new(user=request.user, fleet_id=data.pop("fleet"), node_id=data.pop("node", None))
        change = node_price_save(price=price, data=data, user=request.user, now=timezone.now())
        return written(NodePriceOutputSerializer, change, created=True)


class NodePriceDetailView(InputView):
    @extend_schema(operation_id="node_prices_read", responses={200: NodePriceOutputSerializer, **ERRORS})
    def get(self, request: Request, price_id: int) -> Response:
        return Response(
            NodePriceOutputSerializer(owned(node_prices_for_user(user=request.user), price_id, "price")).data
        )

    @extend_schema(
        operation_id="node_prices_update", summary="Change a price (the fields given; fleet and node stay)",
        request=NodePriceInputSerializer(partial=True), responses={200: NodePriceWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def patch(self, request: Request, price_id: int) -> Response:
        price = owned(node_prices_for_user(user=request.user), price_id, "price")
        change_check(user=request.user, organization=price.fleet.organization_id, capability=Capability.PRICES)
        data = validated(NodePriceInputSerializer, request, partial=True)
        change = node_price_save(price=price, data=data, user=request.user, now=timezone.now())
        return written(NodePriceOutputSerializer, change)


# --- site tariffs ------------------------------------------------------------------


# A row of a site's (a tariff, a dated PUE or market factor): its organization is the site's.
class SiteRowSerializer(OrganizationRowSerializer):
    organization_id = serializers.IntegerField(source="site.organization_id")
    site_id = serializers.IntegerField()


class WindowSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=64)
    start = serializers.RegexField(r"^\d\d:\d\d$", help_text="HH:MM, site local time")
    end = serializers.RegexField(r"^\d\d:\d\d$", help_text="HH:MM, exclusive; may cross midnight")
    price_per_kwh = serializers.DecimalField(max_digits=14, decimal_places=6, min_value=0)
    days = serializers.ListField(child=serializers.IntegerField(min_value=0, max_value=6), required=False)


class SiteTariffInputSerializer(serializers.Serializer):
    site = serializers.IntegerField(help_text="create only")
    flat_price_per_kwh = _money(required=False, allow_null=True, help_text="site currency per kWh")
    windows = WindowSerializer(many=True, required=False, help_text="time-of-use windows covering every hour once")
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(required=False, allow_null=True, help_text="exclusive; empty: in force")
    prices_include_vat = serializers.BooleanField(
        required=False, help_text="the prices per kWh include VAT (gross); default false (net)"
    )
    fixed_per_month = _money(required=False, help_text="site currency per month, net; prorated by days in force")
    demand_per_kw_month = _money(required=False, help_text="site currency per kW of the month's peak demand, net")


class SiteTariffOutputSerializer(SiteRowSerializer):
    flat_price_per_kwh = serializers.DecimalField(max_digits=14, decimal_places=6, allow_null=True)
    windows = serializers.JSONField()
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(allow_null=True)
    prices_include_vat = serializers.BooleanField()
    fixed_per_month = serializers.DecimalField(max_digits=14, decimal_places=6)
    demand_per_kw_month = serializers.DecimalField(max_digits=14, decimal_places=6)


class SiteTariffWrittenSerializer(SiteTariffOutputSerializer):
    ledger_hours_reopened = _reopened()


def _windows(data: dict[str, Any]) -> dict[str, Any]:
    """Windows stored as the model keeps them: prices as strings (JSON), days only when given."""
    if "windows" in data:
        data["windows"] = [window | {"price_per_kwh": str(window["price_per_kwh"])} for window in data["windows"]]
    return data


def site_tariffs_for_user(*, user: Any) -> QuerySet[SiteTariff]:
    return SiteTariff.objects.filter(site__in=sites_for_user(user=user)).select_related("site")


class SiteTariffsView(InputView):
    @extend_schema(operation_id="site_tariffs_list", responses={200: SiteTariffOutputSerializer(many=True), **ERRORS})
    def get(self, request: Request) -> Response:
        return Response(SiteTariffOutputSerializer(site_tariffs_for_user(user=request.user), many=True).data)

    @extend_schema(
        operation_id="site_tariffs_create", summary="A site's electricity tariff, flat or time-of-use, from valid_from",
        request=SiteTariffInputSerializer, responses={201: SiteTariffWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def post(self, request: Request) -> Response:
        data = _windows(validated(SiteTariffInputSerializer, request))
        site = owned(sites_for_user(user=request.user), data.pop("site"), "site")
        change_check(user=request.user, organization=site.organization_id, capability=Capability.PRICES)
        change = site_tariff_save(tariff=SiteTariff(site=site), data=data, user=request.user, now=timezone.now())
        return written(SiteTariffOutputSerializer, change, created=True)


class SiteTariffDetailView(InputView):
    @extend_schema(operation_id="site_tariffs_read", responses={200: SiteTariffOutputSerializer, **ERRORS})
    def get(self, request: Request, tariff_id: int) -> Response:
        tariff = owned(site_tariffs_for_user(user=request.user), tariff_id, "tariff")
        return Response(SiteTariffOutputSerializer(tariff).data)

    @extend_schema(
        operation_id="site_tariffs_update", summary="Change a tariff (the fields given; the site stays)",
        request=SiteTariffInputSerializer(partial=True), responses={200: SiteTariffWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def patch(self, request: Request, tariff_id: int) -> Response:
        tariff = owned(site_tariffs_for_user(user=request.user), tariff_id, "tariff")
        change_check(user=request.user, organization=tariff.site.organization_id, capability=Capability.PRICES)
        data = _windows(validated(SiteTariffInputSerializer, request, partial=True))
        if "windows" in data and "flat_price_per_kwh" not in data:
            data["flat_price_per_kwh"] = None  # windows given replace a flat price
        if data.get("flat_price_per_kwh") is not None and "windows" not in data:
            data["windows"] = []  # and a flat price replaces windows
        change = site_tariff_save(tariff=tariff, data=data, user=request.user, now=timezone.now())
        return written(SiteTariffOutputSerializer, change)


# --- site PUE ----------------------------------------------------------------------


class SitePueSerializer(serializers.Serializer):
    site_id = serializers.IntegerField(source="pk", read_only=True)
    pue = serializers.DecimalField(max_digits=4, decimal_places=2, min_value=1, help_text="facility / IT energy")


class SitePueWrittenSerializer(SitePueSerializer):
    ledger_hours_reopened = _reopened()


class SitePueView(InputView):
    @extend_schema(operation_id="site_pue_read", responses={200: SitePueSerializer, **ERRORS})
    def get(self, request: Request, site_id: int) -> Response:
        return Response(SitePueSerializer(owned(sites_for_user(user=request.user), site_id, "site")).data)

    @extend_schema(
        operation_id="site_pue_update",
        summary="Change a site's own PUE: every stored hour of the site that no dated PUE covers is recomputed",
        request=SitePueSerializer, responses={200: SitePueWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def put(self, request: Request, site_id: int) -> Response:
        site = owned(sites_for_user(user=request.user), site_id, "site")
        change_check(user=request.user, organization=site.organization_id, capability=Capability.PRICES)
        pue = validated(SitePueSerializer, request)["pue"]
        change = site_pue_update(site=site, pue=pue, user=request.user, now=timezone.now())
        return written(SitePueSerializer, change)


# --- GPU assets --------------------------------------------------------------------


class GpuAssetInputSerializer(serializers.Serializer):
    gpu = serializers.IntegerField(help_text="create only")
    acquired_on = serializers.DateField(required=False, allow_null=True)
    condition = serializers.ChoiceField(choices=GpuAsset.Condition.choices, required=False)
    prior_use_years = serializers.DecimalField(max_digits=5, decimal_places=2, min_value=0, required=False)
    expected_own_years = serializers.DecimalField(
        max_digits=5, decimal_places=2, min_value=Decimal("0.1"), required=False, allow_null=True
    )
    profile_key = serializers.SlugField(max_length=64, required=False, allow_blank=True)
    node_price = serializers.IntegerField(
        required=False, allow_null=True,
        help_text="the owned price (the node's, or its fleet's default) the card was bought under; empty: the "
        "node's first owned price. Without acquired_on, the card's embodied life starts at its in-service date",
    )  # fmt: skip


class GpuAssetOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    gpu_id = serializers.IntegerField()
    node_id = serializers.IntegerField(source="gpu.node_id")
    acquired_on = serializers.DateField(allow_null=True)
    condition = serializers.CharField()
    prior_use_years = serializers.DecimalField(max_digits=5, decimal_places=2)
    expected_own_years = serializers.DecimalField(max_digits=5, decimal_places=2, allow_null=True)
    profile_key = serializers.CharField()
    node_price_id = serializers.IntegerField(allow_null=True, help_text="the owned price the card was bought under")


class GpuAssetWrittenSerializer(GpuAssetOutputSerializer):
    ledger_hours_reopened = _reopened()


def gpu_assets_for_user(*, user: Any) -> QuerySet[GpuAsset]:
    return GpuAsset.objects.filter(gpu__in=gpus_for_user(user=user)).select_related("gpu__node__fleet")


def _asset_price(data: dict[str, Any], user: Any) -> dict[str, Any]:
    """``node_price`` as the user's price row (404 for one not theirs); the model checks it fits the card."""
    if data.get("node_price") is not None:
        data["node_price"] = owned(node_prices_for_user(user=user), data["node_price"], "node_price")
    return data


class GpuAssetsView(InputView):
    @extend_schema(operation_id="gpu_assets_list", responses={200: GpuAssetOutputSerializer(many=True), **ERRORS})
    def get(self, request: Request) -> Response:
        return Response(GpuAssetOutputSerializer(gpu_assets_for_user(user=request.user), many=True).data)

    @extend_schema(
        operation_id="gpu_assets_create", summary="Record how a GPU was acquired (its embodied carbon follows)",
        request=GpuAssetInputSerializer, responses={201: GpuAssetWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def post(self, request: Request) -> Response:
        data = _asset_price(validated(GpuAssetInputSerializer, request), request.user)
        gpu = owned(gpus_for_user(user=request.user).select_related("node__fleet"), data.pop("gpu"), "GPU")
        change_check(user=request.user, organization=gpu.node.fleet.organization_id, capability=Capability.PRICES)
        if GpuAsset.objects.filter(gpu=gpu).exists():
            raise ValidationError({"gpu": f"GPU {gpu.pk} already has an asset record: change it instead"})
        change = gpu_asset_save(asset=GpuAsset(gpu=gpu), data=data, user=request.user, now=timezone.now())
        return written(GpuAssetOutputSerializer, change, created=True)


class GpuAssetDetailView(InputView):
    @extend_schema(operation_id="gpu_assets_read", responses={200: GpuAssetOutputSerializer, **ERRORS})
    def get(self, request: Request, asset_id: int) -> Response:
        return Response(GpuAssetOutputSerializer(owned(gpu_assets_for_user(user=request.user), asset_id, "asset")).data)

    @extend_schema(
        operation_id="gpu_assets_update", summary="Change a GPU asset (the fields given; the GPU stays)",
        request=GpuAssetInputSerializer(partial=True), responses={200: GpuAssetWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def patch(self, request: Request, asset_id: int) -> Response:
        asset = owned(gpu_assets_for_user(user=request.user), asset_id, "asset")
        organization_id = asset.gpu.node.fleet.organization_id
        change_check(user=request.user, organization=organization_id, capability=Capability.PRICES)
        data = _asset_price(validated(GpuAssetInputSerializer, request, partial=True), request.user)
        change = gpu_asset_save(asset=asset, data=data, user=request.user, now=timezone.now())
        return written(GpuAssetOutputSerializer, change)

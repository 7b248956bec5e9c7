"""``/api/v1/site-pue-periods/``, ``/api/v1/site-market-factors/``, ``/api/v1/site-taxes/``: a site's dated inputs.

- PUE periods (``SitePue``): the facility overhead of a site over a period
  (``valid_from``, exclusive ``valid_to``); hours no period covers take the
  site's own PUE (``/api/v1/sites/<id>/pue/``). Written by ``admin`` and
  ``finance``: PUE turns metered IT energy into the facility energy that the
  electricity bill and the ledger's energy cost are figured on, so it sits with
  prices and tariffs (``Capability.PRICES``), as the site's own PUE always has.
- Market factors (``SiteMarketFactor``): a site's supplier-specific or
  residual-mix emission factor, the ledger's per-line market-based figure.
  Written by ``admin`` and ``sustainability`` (``Capability.SUSTAINABILITY``,
  "instruments, intensity uploads and factors").
- Taxes (``SiteTax``): a site's VAT rate (a fraction 0-1, recoverable or not)
  and energy tax per facility kWh over a period (``accounting.ledger.tax``).
  Written by ``admin`` and ``finance`` (``Capability.PRICES``): taxes are part
  of what a price costs, as tariffs are.

Any member reads. Every write answers with the row and ``ledger_hours_reopened``;
a delete answers 200 with the deleted row. Refusals as the other inputs: 400
invalid or overlapping, 403 role, 404 not yours, 409 locked period.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Model, QuerySet
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from accounting.inputs.api import SiteRowSerializer, written
from accounting.inputs.services import (
    InputChange,
    site_market_factor_save,
    site_pue_period_save,
    site_tax_save,
    validity_row_delete,
)
from accounting.models import SiteMarketFactor, SitePue, SiteTax
from common.api import ERRORS, InputView, owned, validated
from fleets.permissions import Capability, change_check
from fleets.selectors import sites_for_user


class SitePuePeriodInputSerializer(serializers.Serializer):
    site = serializers.IntegerField(help_text="create only")
    pue = serializers.DecimalField(max_digits=4, decimal_places=2, min_value=1, help_text="facility / IT energy")
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(required=False, allow_null=True, help_text="exclusive; empty: in force")


class SitePuePeriodOutputSerializer(SiteRowSerializer):
    pue = serializers.DecimalField(max_digits=4, decimal_places=2)
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(allow_null=True)


class SitePuePeriodWrittenSerializer(SitePuePeriodOutputSerializer):
    ledger_hours_reopened = serializers.IntegerField(help_text="stored ledger hours marked for recomputation")


class MarketFactorInputSerializer(serializers.Serializer):
    site = serializers.IntegerField(help_text="create only")
    gco2e_per_kwh = serializers.DecimalField(max_digits=9, decimal_places=3, min_value=0)
    source = serializers.CharField(max_length=128, help_text="e.g. supplier:Acme-2026 or residual-mix:AIB-2024")  # type: ignore[assignment]
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(required=False, allow_null=True, help_text="exclusive; empty: in force")


class MarketFactorOutputSerializer(SiteRowSerializer):
    gco2e_per_kwh = serializers.DecimalField(max_digits=9, decimal_places=3)
    source = serializers.CharField()  # type: ignore[assignment]
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(allow_null=True)


class MarketFactorWrittenSerializer(MarketFactorOutputSerializer):
    ledger_hours_reopened = serializers.IntegerField(help_text="stored ledger hours marked for recomputation")


class SiteTaxInputSerializer(serializers.Serializer):
    site = serializers.IntegerField(help_text="create only")
    vat_rate = serializers.DecimalField(
        max_digits=7, decimal_places=6, min_value=0, max_value=1, required=False,
        help_text="VAT as a fraction from 0 to 1 (0.25 = 25 %)",
    )  # fmt: skip
    vat_recoverable = serializers.BooleanField(
        required=False, help_text="input VAT is reclaimed (default): a receivable, not a cost"
    )
    energy_tax_per_kwh = serializers.DecimalField(
        max_digits=14, decimal_places=6, min_value=0, required=False, help_text="site currency per facility kWh"
    )
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(required=False, allow_null=True, help_text="exclusive; empty: in force")


class SiteTaxOutputSerializer(SiteRowSerializer):
    vat_rate = serializers.DecimalField(max_digits=7, decimal_places=6)
    vat_recoverable = serializers.BooleanField()
    energy_tax_per_kwh = serializers.DecimalField(max_digits=14, decimal_places=6)
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(allow_null=True)


class SiteTaxWrittenSerializer(SiteTaxOutputSerializer):
    ledger_hours_reopened = serializers.IntegerField(help_text="stored ledger hours marked for recomputation")


class _SiteRowsView(InputView):
    """List and create the dated rows of the user's sites (``model``, written by ``capability``)."""

    model: type[Model] = SitePue
    what = "PUE period"
    capability = Capability.PRICES
    input_serializer: type[serializers.Serializer] = SitePuePeriodInputSerializer
    output_serializer: type[serializers.Serializer] = SitePuePeriodOutputSerializer

    def rows(self, request: Request) -> QuerySet[Any]:
        sites = sites_for_user(user=request.user)
        return self.model._default_manager.filter(site__in=sites).select_related("site")

    def save(self, row: Any, data: dict[str, Any], request: Request) -> InputChange:
        raise NotImplementedError

    def list_rows(self, request: Request) -> Response:
        return Response(self.output_serializer(self.rows(request), many=True).data)

    def create_row(self, request: Request) -> Response:
        data = validated(self.input_serializer, request)
        site = owned(sites_for_user(user=request.user), data.pop("site"), "site")
        change_check(user=request.user, organization=site.organization_id, capability=self.capability)
        change = self.save(self.model(site=site), data, request)
        return written(self.output_serializer, change, created=True)

    def read_row(self, request: Request, row_id: int) -> Response:
        return Response(self.output_serializer(owned(self.rows(request), row_id, self.what)).data)

    def change_row(self, request: Request, row_id: int) -> Response:
        row = owned(self.rows(request), row_id, self.what)
        change_check(user=request.user, organization=row.site.organization_id, capability=self.capability)
        data = validated(self.input_serializer, request, partial=True)
        data.pop("site", None)
        return written(self.output_serializer, self.save(row, data, request))

    def delete_row(self, request: Request, row_id: int) -> Response:
        row = owned(self.rows(request), row_id, self.what)
        change_check(user=request.user, organization=row.site.organization_id, capability=self.capability)
        body = dict(self.output_serializer(row).data)
        change = validity_row_delete(row=row, user=request.user, now=timezone.now())
        return Response(body | {"ledger_hours_reopened": change.ledger_hours_reopened}, status=status.HTTP_200_OK)


class _PueRows(_SiteRowsView):
    def save(self, row: Any, data: dict[str, Any], request: Request) -> InputChange:
        return site_pue_period_save(row=row, data=data, user=request.user, now=timezone.now())


class _MarketRows(_SiteRowsView):
    model = SiteMarketFactor
    what = "market factor"
    capability = Capability.SUSTAINABILITY
    input_serializer = MarketFactorInputSerializer
    output_serializer = MarketFactorOutputSerializer

    def save(self, row: Any, data: dict[str, Any], request: Request) -> InputChange:
        return site_market_factor_save(row=row, data=data, user=request.user, now=timezone.now())


class _TaxRows(_SiteRowsView):
    model = SiteTax
    what = "site tax"
    capability = Capability.PRICES
    input_serializer = SiteTaxInputSerializer
    output_serializer = SiteTaxOutputSerializer

    def save(self, row: Any, data: dict[str, Any], request: Request) -> InputChange:
        return site_tax_save(row=row, data=data, user=request.user, now=timezone.now())


class SitePuePeriodsView(_PueRows):
    @extend_schema(
        operation_id="site_pue_periods_list", responses={200: SitePuePeriodOutputSerializer(many=True), **ERRORS}
    )
    def get(self, request: Request) -> Response:
        return self.list_rows(request)

    @extend_schema(
        operation_id="site_pue_periods_create", summary="A site's PUE from valid_from (to valid_to); admin or finance",
        request=SitePuePeriodInputSerializer, responses={201: SitePuePeriodWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def post(self, request: Request) -> Response:
        return self.create_row(request)


class SitePuePeriodDetailView(_PueRows):
    @extend_schema(operation_id="site_pue_periods_read", responses={200: SitePuePeriodOutputSerializer, **ERRORS})
    def get(self, request: Request, row_id: int) -> Response:
        return self.read_row(request, row_id)

    @extend_schema(
        operation_id="site_pue_periods_update", summary="Change a PUE period (the fields given; the site stays)",
        request=SitePuePeriodInputSerializer(partial=True), responses={200: SitePuePeriodWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def patch(self, request: Request, row_id: int) -> Response:
        return self.change_row(request, row_id)

    @extend_schema(
        operation_id="site_pue_periods_delete", summary="Delete a PUE period: its hours go back to the site's PUE",
        responses={200: SitePuePeriodWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def delete(self, request: Request, row_id: int) -> Response:
        return self.delete_row(request, row_id)


class SiteMarketFactorsView(_MarketRows):
    @extend_schema(
        operation_id="site_market_factors_list", responses={200: MarketFactorOutputSerializer(many=True), **ERRORS}
    )
    def get(self, request: Request) -> Response:
        return self.list_rows(request)

    @extend_schema(
        operation_id="site_market_factors_create",
        summary="A site's supplier-specific or residual-mix factor from valid_from; admin or sustainability",
        request=MarketFactorInputSerializer, responses={201: MarketFactorWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def post(self, request: Request) -> Response:
        return self.create_row(request)


class SiteMarketFactorDetailView(_MarketRows):
    @extend_schema(operation_id="site_market_factors_read", responses={200: MarketFactorOutputSerializer, **ERRORS})
    def get(self, request: Request, row_id: int) -> Response:
        return self.read_row(request, row_id)

    @extend_schema(
        operation_id="site_market_factors_update", summary="Change a market factor (the fields given; the site stays)",
        request=MarketFactorInputSerializer(partial=True), responses={200: MarketFactorWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def patch(self, request: Request, row_id: int) -> Response:
        return self.change_row(request, row_id)

    @extend_schema(
        operation_id="site_market_factors_delete", summary="Delete a market factor: its hours lose their market figure",
        responses={200: MarketFactorWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def delete(self, request: Request, row_id: int) -> Response:
        return self.delete_row(request, row_id)


class SiteTaxesView(_TaxRows):
    @extend_schema(operation_id="site_taxes_list", responses={200: SiteTaxOutputSerializer(many=True), **ERRORS})
    def get(self, request: Request) -> Response:
        return self.list_rows(request)

    @extend_schema(
        operation_id="site_taxes_create", summary="A site's VAT and energy tax from valid_from; admin or finance",
        request=SiteTaxInputSerializer, responses={201: SiteTaxWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def post(self, request: Request) -> Response:
        return self.create_row(request)


class SiteTaxDetailView(_TaxRows):
    @extend_schema(operation_id="site_taxes_read", responses={200: SiteTaxOutputSerializer, **ERRORS})
    def get(self, request: Request, row_id: int) -> Response:
        return self.read_row(request, row_id)

    @extend_schema(
        operation_id="site_taxes_update", summary="Change a site's taxes (the fields given; the site stays)",
        request=SiteTaxInputSerializer(partial=True), responses={200: SiteTaxWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def patch(self, request: Request, row_id: int) -> Response:
        return self.change_row(request, row_id)

    @extend_schema(
        operation_id="site_taxes_delete", summary="Delete a site's taxes: its hours carry none",
        responses={200: SiteTaxWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def delete(self, request: Request, row_id: int) -> Response:
        return self.delete_row(request, row_id)

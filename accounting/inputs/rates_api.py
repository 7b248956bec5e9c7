"""``/api/v1/exchange-rates/`` (list, create), ``/api/v1/exchange-rates/<id>/`` (read, change, delete) and
``/api/v1/ledger-settings/`` (the organization's reporting currency).

As the node prices: any member reads their organizations' rates; the ``admin``
and ``finance`` roles write (others: 403); another organization's rate is 404.
A refused write changes nothing: 400 naming the field (an unknown currency, a
rate of 0 or below, a month not on its first day), 409 when the rate's month is
locked. Writes answer with the row and ``ledger_hours_reopened``. The CSV upload
is ``/api/v1/exchange-rates/upload/`` (``accounting.inputs.uploads_api``).
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

from django.conf import settings as django_settings
from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from accounting.inputs.api import CurrencyField, OptionalCurrencyField, written
from accounting.inputs.rates import exchange_rate_delete, exchange_rate_save
from accounting.inputs.services import organization_setting_save
from accounting.models import ExchangeRate, LedgerSettings
from common.api import ERRORS, InputView, OrganizationRowSerializer, owned, validated
from common.query import QueryInputSerializer, organization_ref_field, query_validated
from common.scope import report_organization
from fleets.permissions import Capability, change_check
from fleets.selectors import organizations_for_user


def _month(value: date) -> None:
    if value.day != 1:
        raise serializers.ValidationError("must be the first day of a month, e.g. 2026-01-01")


def _rate(value: Decimal) -> None:
    if not value > 0:
        raise serializers.ValidationError("must be above 0 (units of quote_currency per one unit of currency)")


class ExchangeRateInputSerializer(serializers.Serializer):
    organization = organization_ref_field(
        "create only: organization id or slug; optional if you belong to one only", required=False
    )
    currency = CurrencyField(help_text="converted from, ISO 4217 (e.g. USD)")
    quote_currency = CurrencyField(help_text="converted into, ISO 4217 (e.g. SEK)")
    month = serializers.DateField(validators=[_month], help_text="the first day of the month the rate is for")
    kind = serializers.ChoiceField(
        choices=ExchangeRate.Kind.choices, required=False,
        help_text="average: the month's average (P&L figures; the default); closing: the month-end rate (balances)",
    )  # fmt: skip
    rate = serializers.DecimalField(
        max_digits=20, decimal_places=10, validators=[_rate], help_text="quote_currency per one currency, above 0"
    )
    source = serializers.CharField(max_length=200, required=False, allow_blank=True, help_text="ECB reference rates")  # type: ignore[assignment]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("currency") and attrs.get("currency") == attrs.get("quote_currency"):
            raise serializers.ValidationError({"quote_currency": "must differ from currency"})
        return attrs


class ExchangeRateOutputSerializer(OrganizationRowSerializer):
    currency = serializers.CharField()
    quote_currency = serializers.CharField()
    month = serializers.DateField()
    kind = serializers.CharField()
    rate = serializers.DecimalField(max_digits=20, decimal_places=10)
    source = serializers.CharField()  # type: ignore[assignment]


class ExchangeRateWrittenSerializer(ExchangeRateOutputSerializer):
    ledger_hours_reopened = serializers.IntegerField(help_text="stored ledger hours marked for recomputation")


def exchange_rates_for_user(*, user: Any) -> QuerySet[ExchangeRate]:
    return ExchangeRate.objects.filter(organization__in=organizations_for_user(user=user))


class ExchangeRatesView(InputView):
    @extend_schema(
        operation_id="exchange_rates_list", responses={200: ExchangeRateOutputSerializer(many=True), **ERRORS}
    )
    def get(self, request: Request) -> Response:
        return Response(ExchangeRateOutputSerializer(exchange_rates_for_user(user=request.user), many=True).data)

    @extend_schema(
        operation_id="exchange_rates_create",
        summary="A rate of the organization's table: a pair, a month, average or closing (nothing is downloaded)",
        request=ExchangeRateInputSerializer, responses={201: ExchangeRateWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def post(self, request: Request) -> Response:
        data = validated(ExchangeRateInputSerializer, request)
        organization = report_organization(user=request.user, ref=data.pop("organization", None))
        change_check(user=request.user, organization=organization, capability=Capability.PRICES)
        row = ExchangeRate(organization=organization)
        change = exchange_rate_save(row=row, data=data, user=request.user, now=timezone.now())
        return written(ExchangeRateOutputSerializer, change, created=True)


class ExchangeRateDetailView(InputView):
    @extend_schema(operation_id="exchange_rates_read", responses={200: ExchangeRateOutputSerializer, **ERRORS})
    def get(self, request: Request, rate_id: int) -> Response:
        row = owned(exchange_rates_for_user(user=request.user), rate_id, "exchange rate")
        return Response(ExchangeRateOutputSerializer(row).data)

    @extend_schema(
        operation_id="exchange_rates_update", summary="Change a rate (the fields given; the organization stays)",
        request=ExchangeRateInputSerializer(partial=True), responses={200: ExchangeRateWrittenSerializer, **ERRORS},
    )  # fmt: skip
    def patch(self, request: Request, rate_id: int) -> Response:
        row = owned(exchange_rates_for_user(user=request.user), rate_id, "exchange rate")
        change_check(user=request.user, organization=row.organization_id, capability=Capability.PRICES)
        data = validated(ExchangeRateInputSerializer, request, partial=True)
        data.pop("organization", None)
        change = exchange_rate_save(row=row, data=data, user=request.user, now=timezone.now())
        return written(ExchangeRateOutputSerializer, change)

    @extend_schema(operation_id="exchange_rates_delete", responses={200: ExchangeRateWrittenSerializer, **ERRORS})
    def delete(self, request: Request, rate_id: int) -> Response:
        row = owned(exchange_rates_for_user(user=request.user), rate_id, "exchange rate")
        change_check(user=request.user, organization=row.organization_id, capability=Capability.PRICES)
        answer = ExchangeRateOutputSerializer(row).data
        change = exchange_rate_delete(row=row, user=request.user, now=timezone.now())
        return Response(dict(answer) | {"ledger_hours_reopened": change.ledger_hours_reopened})


# --- the organization's reporting currency ------------------------------------------


class LedgerSettingsQuerySerializer(QueryInputSerializer):
    organization = organization_ref_field("organization id or slug; optional if you belong to one", required=False)


class ReportingCurrencyInputSerializer(serializers.Serializer):
    organization = organization_ref_field("organization id or slug; optional if you belong to one", required=False)
    reporting_currency = OptionalCurrencyField(required=False, help_text="ISO 4217; blank: none; absent: unchanged")


class LedgerSettingsOutputSerializer(serializers.Serializer):
    organization_id = serializers.IntegerField()
    reporting_currency = serializers.CharField(help_text="the currency the reports also total in; blank: none")


def ledger_settings_of(organization: Any) -> LedgerSettings:
    """The organization's settings, or unsaved ones holding what applies without a row (its policy unchanged)."""
    stored = LedgerSettings.objects.filter(organization=organization).first()
    if stored is not None:
        return stored
    return LedgerSettings(organization=organization, model_host_power=django_settings.LEDGER_MODEL_HOST_POWER_DEFAULT)


class LedgerSettingsView(InputView):
    @extend_schema(
        operation_id="ledger_settings_read", parameters=[LedgerSettingsQuerySerializer],
        responses={200: LedgerSettingsOutputSerializer, **ERRORS},
    )  # fmt: skip
    def get(self, request: Request) -> Response:
        query = query_validated(LedgerSettingsQuerySerializer, request)
        organization = report_organization(user=request.user, ref=query.get("organization"))
        return Response(LedgerSettingsOutputSerializer(ledger_settings_of(organization)).data)

    @extend_schema(
        operation_id="ledger_settings_update",
        summary="The organization's reporting currency (audited; no stored line changes)",
        request=ReportingCurrencyInputSerializer, responses={200: LedgerSettingsOutputSerializer, **ERRORS},
    )  # fmt: skip
    def patch(self, request: Request) -> Response:
        data = validated(ReportingCurrencyInputSerializer, request)
        organization = report_organization(user=request.user, ref=data.get("organization"))
        change_check(user=request.user, organization=organization, capability=Capability.PRICES)
        row = ledger_settings_of(organization)
        if "reporting_currency" not in data:  # a PATCH that changes nothing: the settings as they are
            return Response(LedgerSettingsOutputSerializer(row).data, status=status.HTTP_200_OK)
        row.reporting_currency = data["reporting_currency"]
        change = organization_setting_save(row=row, subject="ledger_settings", user=request.user, now=timezone.now())
        return Response(LedgerSettingsOutputSerializer(change.obj).data, status=status.HTTP_200_OK)

"""``/api/v1/journal-accounts/`` (list, create) and ``/api/v1/journal-accounts/<id>/`` (read, change, delete).

An organization's own account map for the journal export: per charge kind, the debit and credit accounts
(code and name) the journal books it to in place of the default map (``reports.journal``). As the node
prices: any member reads their organizations' rows, the ``admin`` and ``finance`` roles write (others: 403),
another organization's row is 404; every write is audited (subject ``journal_account``). A map changes no
ledger line, so it re-opens none and no locked period refuses it (``organization_setting_save``): the journal
of any month, exported again, books to the map in force then, and its rows name it (``account_map``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from accounting.inputs.services import InputChange, organization_setting_save
from accounting.models import JournalAccount
from accounting.models.journal import ACCOUNT_CODE_MAX
from common.api import ERRORS, InputInvalid, InputView, OrganizationRowSerializer, owned, validated
from common.query import organization_ref_field
from common.scope import report_organization
from fleets.permissions import Capability, change_check
from fleets.selectors import organizations_for_user
from governance.audit import audit_record, snapshot

JOURNAL_ACCOUNT_FIELDS = (
    "charge_kind", "debit_account_code", "debit_account_name", "credit_account_code", "credit_account_name",
)  # fmt: skip


def journal_account_save(*, row: JournalAccount, data: Mapping[str, Any], user: Any, now: datetime) -> InputChange:
    """Create (``row`` unsaved, with its organization) or change a row of the map: audited, one per kind."""
    with transaction.atomic():
        for name in JOURNAL_ACCOUNT_FIELDS:
            if name in data:
                setattr(row, name, data[name])
        taken = JournalAccount.objects.filter(organization_id=row.organization_id, charge_kind=row.charge_kind)
        if taken.exclude(pk=row.pk).exists():
            raise InputInvalid(f"charge_kind: {row.charge_kind} is mapped already: change that row instead")
        return organization_setting_save(row=row, subject="journal_account", user=user, now=now)


def journal_account_delete(*, row: JournalAccount, user: Any, now: datetime) -> None:
    """Delete a row of the map (the kind falls back to the default map), audited."""
    with transaction.atomic():
        before, row_id = snapshot(row), row.pk
        row.delete()
        audit_record(
            organization_id=row.organization_id, user=user, subject="journal_account", object_id=row_id,
            before=before, after=None, at=now,
        )  # fmt: skip


def _code(help_text: str) -> serializers.CharField:
    return serializers.CharField(max_length=ACCOUNT_CODE_MAX, help_text=help_text)


def _name() -> serializers.CharField:
    return serializers.CharField(max_length=128, required=False, allow_blank=True)


class JournalAccountInputSerializer(serializers.Serializer):
    organization = organization_ref_field(
        "create only: organization id or slug; optional if you belong to one only", required=False
    )
    charge_kind = serializers.ChoiceField(choices=JournalAccount.ChargeKind.choices)
    debit_account_code = _code("the account debited (the expense), 1-20 characters, e.g. 5410")
    debit_account_name = _name()
    credit_account_code = _code("the account credited (the counter account), 1-20 characters, e.g. 2000")
    credit_account_name = _name()


class JournalAccountOutputSerializer(OrganizationRowSerializer):
    charge_kind = serializers.CharField()
    debit_account_code = serializers.CharField()
    debit_account_name = serializers.CharField()
    credit_account_code = serializers.CharField()
    credit_account_name = serializers.CharField()


def journal_accounts_for_user(*, user: Any) -> QuerySet[JournalAccount]:
    return JournalAccount.objects.filter(organization__in=organizations_for_user(user=user))


class JournalAccountsView(InputView):
    @extend_schema(
        operation_id="journal_accounts_list", responses={200: JournalAccountOutputSerializer(many=True), **ERRORS}
    )
    def get(self, request: Request) -> Response:
        rows = journal_accounts_for_user(user=request.user)
        return Response(JournalAccountOutputSerializer(rows, many=True).data)

    @extend_schema(
        operation_id="journal_accounts_create",
        summary="Map a charge kind to the organization's own debit and credit accounts in the journal export",
        request=JournalAccountInputSerializer, responses={201: JournalAccountOutputSerializer, **ERRORS},
    )  # fmt: skip
    def post(self, request: Request) -> Response:
        data = validated(JournalAccountInputSerializer, request)
        organization = report_organization(user=request.user, ref=data.pop("organization", None))
        change_check(user=request.user, organization=organization, capability=Capability.PRICES)
        change = journal_account_save(
            row=JournalAccount(organization=organization), data=data, user=request.user, now=timezone.now()
        )
        return Response(JournalAccountOutputSerializer(change.obj).data, status=status.HTTP_201_CREATED)


class JournalAccountDetailView(InputView):
    @extend_schema(operation_id="journal_accounts_read", responses={200: JournalAccountOutputSerializer, **ERRORS})
    def get(self, request: Request, row_id: int) -> Response:
        row = owned(journal_accounts_for_user(user=request.user), row_id, "journal account")
        return Response(JournalAccountOutputSerializer(row).data)

    @extend_schema(
        operation_id="journal_accounts_update", summary="Change a row of the account map (the fields given)",
        request=JournalAccountInputSerializer(partial=True), responses={200: JournalAccountOutputSerializer, **ERRORS},
    )  # fmt: skip
    def patch(self, request: Request, row_id: int) -> Response:
        row = owned(journal_accounts_for_user(user=request.user), row_id, "journal account")
        change_check(user=request.user, organization=row.organization_id, capability=Capability.PRICES)
        data = validated(JournalAccountInputSerializer, request, partial=True)
        data.pop("organization", None)
        change = journal_account_save(row=row, data=data, user=request.user, now=timezone.now())
        return Response(JournalAccountOutputSerializer(change.obj).data)

    @extend_schema(operation_id="journal_accounts_delete", responses={204: None, **ERRORS})
    def delete(self, request: Request, row_id: int) -> Response:
        row = owned(journal_accounts_for_user(user=request.user), row_id, "journal account")
        change_check(user=request.user, organization=row.organization_id, capability=Capability.PRICES)
        journal_account_delete(row=row, user=request.user, now=timezone.now())
        return Response(status=status.HTTP_204_NO_CONTENT)

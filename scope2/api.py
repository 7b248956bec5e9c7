"""``/api/v1/instruments/``: the register of contractual instruments (create, list, read, update, evidence).

Authentication as the reports: a personal token (``Bearer wlp_...``) or a
browser session. Any member of the organization reads; the ``admin`` and
``sustainability`` roles write (others: 403); an instrument of an organization
the user does not belong to answers 404. A refused write changes nothing and
says why (400): an invalid field, or an over-allocation.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_serializer, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, NotFound, PermissionDenied
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from common.api import InputViewBase, OrganizationRowSerializer, error_responses, validated
from common.parsers import BoundedJSONParser
from common.scope import writable_organization
from fleets.models import Organization, Site
from fleets.permissions import Capability, RoleRefused, change_check
from governance.audited_write import audited_write
from scope2.claims import OverAllocationError
from scope2.models import TECHNOLOGY_CHOICES, ContractualInstrument
from scope2.quality import PurchaseType
from scope2.selectors import instrument_for_user, instruments_for_user
from scope2.services import (
    EVIDENCE_MAX_BYTES,
    InstrumentInvalid,
    instrument_create,
    instrument_evidence_attach,
    instrument_update,
)


class InstrumentRefused(APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "instrument_refused"


_ERRORS = error_responses(
    invalid="an invalid field, or an over-allocation; nothing was changed",
    forbidden="a node token, or a role that may not edit instruments",
    not_found="an instrument or organization that is not among yours",
    conflict="the instrument's delivery period overlaps a locked period; nothing was changed",
)


class HourSerializer(serializers.Serializer):
    hour_start = serializers.DateTimeField(help_text="UTC, on a whole hour")
    mwh = serializers.DecimalField(max_digits=16, decimal_places=6, min_value=0)


class InstrumentInputSerializer(serializers.Serializer):
    organization = serializers.CharField(
        required=False, max_length=200, help_text="create only: id or slug; optional if you belong to one only"
    )
    site = serializers.IntegerField(min_value=1, help_text="the site the instrument is claimed for")
    kind = serializers.ChoiceField(choices=ContractualInstrument.Kind.choices)
    name = serializers.CharField(max_length=200)
    volume_mwh = serializers.DecimalField(max_digits=16, decimal_places=6, min_value=0, required=False, allow_null=True)
    share_of_consumption = serializers.DecimalField(
        max_digits=7, decimal_places=6, min_value=0, max_value=1, required=False, allow_null=True
    )
    delivery_start = serializers.DateTimeField()
    delivery_end = serializers.DateTimeField()
    vintage_year = serializers.IntegerField(min_value=1990, max_value=2100)
    generation_zone = serializers.RegexField(r"^[A-Za-z]{2}(-[A-Za-z0-9]+)*$", max_length=64)
    technology = serializers.ChoiceField(choices=TECHNOLOGY_CHOICES)
    emission_factor_gco2e_per_kwh = serializers.DecimalField(
        max_digits=9, decimal_places=3, min_value=0, required=False, allow_null=True,
        help_text="empty: 0 for renewable and nuclear technologies; required otherwise",
    )  # fmt: skip
    certificate_ref = serializers.CharField(max_length=200, required=False, allow_blank=True)
    certificate_mwh = serializers.DecimalField(
        max_digits=16, decimal_places=6, min_value=0, required=False, allow_null=True
    )
    evidence_reference = serializers.CharField(required=False, allow_blank=True, max_length=2000)
    registry = serializers.CharField(required=False, allow_blank=True, max_length=200, help_text="tracking system")
    certificate_id_from = serializers.CharField(required=False, allow_blank=True, max_length=200)
    certificate_id_to = serializers.CharField(required=False, allow_blank=True, max_length=200)
    cancellation_date = serializers.DateField(required=False, allow_null=True, help_text="cancelled or retired on")
    beneficiary = serializers.CharField(required=False, allow_blank=True, max_length=200)
    consumption_period_start = serializers.DateField(required=False, allow_null=True)
    consumption_period_end = serializers.DateField(required=False, allow_null=True, help_text="inclusive")
    purchase_type = serializers.ChoiceField(
        choices=[p.value for p in PurchaseType], required=False, allow_blank=True,
        help_text="unbundled or bundled certificates, a direct line (PPA) or on-site generation",
    )  # fmt: skip
    attributes_exclusive = serializers.BooleanField(
        required=False, allow_null=True, help_text="criterion 7: every instrument conveying the claim goes to you only"
    )
    supplier_rate_delivered_basis = serializers.BooleanField(
        required=False, allow_null=True,
        help_text="criterion 6: the supplier's rate is on delivered electricity, net of certificates sold and retired",
    )  # fmt: skip
    biogenic_co2_g_per_kwh = serializers.DecimalField(
        max_digits=9, decimal_places=3, min_value=0, required=False, allow_null=True,
        help_text="biomass only, and required for it: CO2 of combustion, a memo outside the scopes",
    )  # fmt: skip
    hourly_profile = HourSerializer(
        many=True, required=False, help_text="MWh delivered per hour: enables hourly matching; [] removes it"
    )


@extend_schema_serializer(component_name="ContractualInstrument")
class InstrumentOutputSerializer(OrganizationRowSerializer):
    site_id = serializers.IntegerField()
    kind = serializers.CharField()
    name = serializers.CharField()
    volume_mwh = serializers.DecimalField(max_digits=16, decimal_places=6, allow_null=True, coerce_to_string=False)
    share_of_consumption = serializers.DecimalField(
        max_digits=7, decimal_places=6, allow_null=True, coerce_to_string=False
    )
    delivery_start = serializers.DateTimeField()
    delivery_end = serializers.DateTimeField()
    vintage_year = serializers.IntegerField()
    generation_zone = serializers.CharField()
    technology = serializers.CharField()
    emission_factor_gco2e_per_kwh = serializers.DecimalField(
        max_digits=9, decimal_places=3, allow_null=True, coerce_to_string=False
    )
    certificate_ref = serializers.CharField()
    certificate_mwh = serializers.DecimalField(max_digits=16, decimal_places=6, allow_null=True, coerce_to_string=False)
    evidence_reference = serializers.CharField()
    evidence_file_name = serializers.CharField()
    evidence_file_sha256 = serializers.CharField()
    registry = serializers.CharField()
    certificate_id_from = serializers.CharField()
    certificate_id_to = serializers.CharField()
    cancellation_date = serializers.DateField(allow_null=True)
    beneficiary = serializers.CharField()
    consumption_period_start = serializers.DateField(allow_null=True)
    consumption_period_end = serializers.DateField(allow_null=True)
    purchase_type = serializers.CharField()
    attributes_exclusive = serializers.BooleanField(allow_null=True)
    supplier_rate_delivered_basis = serializers.BooleanField(allow_null=True)
    biogenic_co2_g_per_kwh = serializers.DecimalField(
        max_digits=9, decimal_places=3, allow_null=True, coerce_to_string=False
    )
    hourly_profile_hours = serializers.IntegerField(help_text="hours in the hourly profile (0: annual matching)")


def _output(user: Any, instrument_id: int) -> dict[str, Any]:
    return dict(InstrumentOutputSerializer(instrument_for_user(user=user, instrument_id=instrument_id)).data)


def sustainability_writable(user: Any, organization: Organization) -> None:
    """403 unless ``user`` may change ``organization``'s sustainability inputs (admin, sustainability)."""
    try:
        change_check(user=user, organization=organization, capability=Capability.SUSTAINABILITY)
    except RoleRefused as error:
        raise PermissionDenied(str(error)) from error


def _delivery(instrument: ContractualInstrument) -> tuple[Any, Any]:
    return (instrument.delivery_start, instrument.delivery_end)


def _fields(data: dict[str, Any], organization: Organization) -> tuple[dict[str, Any], list[Any] | None]:
    profile = data.pop("hourly_profile", None)
    data.pop("organization", None)
    if "site" in data:
        site = Site.objects.filter(pk=data["site"], organization=organization).first()
        if site is None:
            raise InstrumentRefused(f"site {data['site']} is not a site of this organization")
        data["site"] = site
    hours = None if profile is None else [(row["hour_start"], row["mwh"]) for row in profile]
    return data, hours


# An operation on a sustainability input (the instrument register, the inventory's inputs): as an input view,
# and a refusal of this app's services (``refusals``) answered 400 as ``refused`` words it. (Comments, not
# docstrings, on the views: drf-spectacular would print a docstring into every operation's schema.)
class SustainabilityInputView(InputViewBase):
    refusals: tuple[type[Exception], ...] = ()

    def refused(self, error: Exception) -> APIException:
        raise NotImplementedError

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, self.refusals):
            exc = self.refused(exc)
        return super().handle_exception(exc)

    @staticmethod
    def validated_writable(serializer: type[serializers.Serializer], request: Request) -> tuple[Any, Organization]:
        """The body ``serializer`` validates, and its organization if the user may write sustainability inputs."""
        data = validated(serializer, request)
        organization = writable_organization(
            user=request.user, ref=data.get("organization"), capability=Capability.SUSTAINABILITY
        )
        return data, organization


# An invalid instrument or an over-allocation: 400, with the code ``over_allocated`` for the latter.
class InstrumentView(SustainabilityInputView):
    refusals = (InstrumentInvalid, OverAllocationError)

    def refused(self, error: Exception) -> APIException:
        return InstrumentRefused(str(error), code="over_allocated" if isinstance(error, OverAllocationError) else None)


class InstrumentsView(InstrumentView):
    @extend_schema(
        operation_id="instruments_list", summary="Contractual instruments of your organizations",
        responses={200: InstrumentOutputSerializer(many=True), **_ERRORS},
    )  # fmt: skip
    def get(self, request: Request) -> Response:
        return Response(InstrumentOutputSerializer(instruments_for_user(user=request.user), many=True).data)

    @extend_schema(
        operation_id="instruments_create",
        summary="Register a PPA, guarantee of origin, REC or supplier-specific rate",
        request=InstrumentInputSerializer,
        responses={201: InstrumentOutputSerializer, **_ERRORS},
    )
    def post(self, request: Request) -> Response:
        data, organization = self.validated_writable(InstrumentInputSerializer, request)
        data, hours = _fields(data, organization)
        instrument = audited_write(
            organization_id=organization.pk, user=request.user, subject="instrument", before=None,
            write=lambda: instrument_create(organization=organization, data=data, profile=hours), period=_delivery,
        )  # fmt: skip
        return Response(_output(request.user, instrument.pk), status=status.HTTP_201_CREATED)


class InstrumentDetailView(InstrumentView):
    @extend_schema(operation_id="instruments_read", responses={200: InstrumentOutputSerializer, **_ERRORS})
    def get(self, request: Request, instrument_id: int) -> Response:
        return Response(_output(request.user, instrument_id))

    @extend_schema(
        operation_id="instruments_update",
        summary="Change an instrument (only the fields given); checked again for over-allocation",
        request=InstrumentInputSerializer(partial=True),
        responses={200: InstrumentOutputSerializer, **_ERRORS},
    )
    def patch(self, request: Request, instrument_id: int) -> Response:
        instrument = instrument_for_user(user=request.user, instrument_id=instrument_id)
        sustainability_writable(request.user, instrument.organization)
        data, hours = _fields(validated(InstrumentInputSerializer, request, partial=True), instrument.organization)
        instrument = audited_write(
            organization_id=instrument.organization_id, user=request.user, subject="instrument",
            before=instrument, write=lambda: instrument_update(instrument=instrument, data=data, profile=hours),
            period=_delivery,
        )  # fmt: skip
        return Response(_output(request.user, instrument.pk))


class InstrumentEvidenceView(InstrumentView):
    parser_classes = [MultiPartParser, FormParser, BoundedJSONParser]

    @extend_schema(
        operation_id="instruments_evidence_read", summary="The attached evidence file, as uploaded",
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY, **_ERRORS},
    )  # fmt: skip
    def get(self, request: Request, instrument_id: int) -> HttpResponse:
        instrument = instrument_for_user(user=request.user, instrument_id=instrument_id)
        content = ContractualInstrument.objects.filter(pk=instrument.pk).values_list("evidence_file", flat=True)[0]
        if not content:
            raise NotFound("no evidence file is attached to this instrument")
        response = HttpResponse(bytes(content), content_type="application/octet-stream")
        # Quotes escaped and non-ASCII names as RFC 6266 filename*: an uploaded name cannot bend the header.
        response["Content-Disposition"] = content_disposition_header(True, instrument.evidence_file_name or "evidence")
        return response

    @extend_schema(
        operation_id="instruments_evidence_attach",
        summary="Attach a contract or cancellation statement (multipart field 'file', 5 MiB at most)",
        request={"multipart/form-data": inline_serializer("EvidenceUpload", {"file": serializers.FileField()})},
        responses={200: InstrumentOutputSerializer, **_ERRORS},
    )
    def put(self, request: Request, instrument_id: int) -> Response:
        instrument = instrument_for_user(user=request.user, instrument_id=instrument_id)
        sustainability_writable(request.user, instrument.organization)
        upload = request.FILES.get("file")
        if upload is None:
            raise InstrumentRefused("send the evidence as the multipart field 'file'")
        if upload.size is not None and upload.size > EVIDENCE_MAX_BYTES:
            raise InstrumentRefused(f"evidence files are limited to {EVIDENCE_MAX_BYTES} bytes")
        content = upload.read()

        def attach() -> ContractualInstrument:
            instrument_evidence_attach(instrument=instrument, name=upload.name or "evidence", content=content)
            return instrument

        audited_write(
            organization_id=instrument.organization_id, user=request.user, subject="instrument",
            before=instrument, write=attach, period=_delivery,  # evidence of a locked period stays as filed
        )  # fmt: skip
        return Response(_output(request.user, instrument_id))

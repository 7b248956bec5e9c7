"""enroll_node: a token shown once, stored hashed, and a clear rule for re-enrollment."""

from __future__ import annotations

import hashlib
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from fleets.models import Fleet, Node, NodeCredential, Organization, Site
from fleets.services import credential_authenticate

ARGS = ["--organization", "Acme AI", "--fleet", "enterprise", "--site", "sjc-1", "--hostname", "gpu-01"]


def enroll(*extra: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("enroll_node", *ARGS, *extra, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.django_db
def test_enroll_creates_inventory_and_prints_token_alone_on_last_line():
    out, err = enroll("--grid-zone", "US-CAL-CISO", "--country", "us", "--pue", "1.2", "--tenure", "owned")

    token = out.strip().splitlines()[-1]
    node = Node.objects.get(hostname="gpu-01")
    assert token.startswith("wln_") and " " not in token and len(token) > 40
    assert node.fleet == Fleet.objects.get(name="enterprise", organization__name="Acme AI")
    assert (node.site.grid_zone, node.site.country, str(node.site.pue), node.tenure) == (
        "US-CAL-CISO",
        "US",
        "1.20",
        "owned",
    )
    assert Organization.objects.get().slug == "acme-ai"
    assert err == ""


@pytest.mark.django_db
def test_token_is_stored_only_as_its_hash():
    out, _ = enroll("--grid-zone", "DE")
    token = out.strip().splitlines()[-1]

    credential = NodeCredential.objects.get()
    assert credential.token_sha256 == hashlib.sha256(token.encode()).hexdigest()
    assert token not in {credential.token_sha256, credential.prefix}
    assert credential_authenticate(token=token).node.hostname == "gpu-01"
    assert credential_authenticate(token=token + "x") is None


@pytest.mark.django_db
def test_reenrolling_revokes_earlier_tokens_by_default():
    first = enroll("--grid-zone", "DE")[0].strip().splitlines()[-1]
    out, _ = enroll()
    second = out.strip().splitlines()[-1]

    assert "revoked 1 earlier token" in out
    assert credential_authenticate(token=first) is None
    assert credential_authenticate(token=second) is not None
    assert Node.objects.count() == 1 and Site.objects.count() == 1


@pytest.mark.django_db
def test_keep_existing_tokens_adds_a_second_active_token():
    first = enroll("--grid-zone", "DE")[0].strip().splitlines()[-1]
    second = enroll("--keep-existing-tokens")[0].strip().splitlines()[-1]

    assert credential_authenticate(token=first) is not None
    assert credential_authenticate(token=second) is not None


@pytest.mark.django_db
def test_new_site_without_grid_zone_warns():
    _, err = enroll()

    assert "no grid zone" in err


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--pue", "abc"], "--pue 'abc' is not a number"),
        (["--pue", "0.8"], "invalid site"),
        (["--time-zone", "Mars/Olympus"], "is not an IANA time zone"),
        (["--grid-zone", "not a zone!"], "invalid site"),
    ],
)
def test_bad_site_values_are_refused_and_nothing_is_created(extra, message):
    with pytest.raises(CommandError, match=message):
        enroll(*extra)

    assert not Organization.objects.exists()
    assert not NodeCredential.objects.exists()


@pytest.mark.django_db
def test_a_node_cannot_move_site_by_reenrollment():
    enroll("--grid-zone", "DE")

    with pytest.raises(CommandError, match="already enrolled at site 'sjc-1'"):
        call_command("enroll_node", *ARGS[:5], "other-site", *ARGS[6:], stdout=StringIO())


@pytest.mark.django_db
def test_commissioned_at_is_the_given_aware_time():
    enroll("--commissioned-at", "2025-11-01T06:30:00+02:00")

    assert Node.objects.get().commissioned_at.isoformat() == "2025-11-01T04:30:00+00:00"


@pytest.mark.django_db
def test_commissioned_at_defaults_to_now():
    before = timezone.now()
    enroll()

    assert before <= Node.objects.get().commissioned_at <= timezone.now()


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["2025-11-01T06:30:00", "yesterday"])
def test_commissioned_at_without_an_offset_or_unreadable_is_refused_and_changes_nothing(value):
    with pytest.raises(CommandError, match="commissioned-at"):
        enroll("--commissioned-at", value)

    assert not Node.objects.exists()


@pytest.mark.django_db
def test_reenrolling_with_commissioned_at_moves_the_commissioning_date():
    enroll("--commissioned-at", "2025-11-01T00:00:00Z")
    out, _ = enroll("--commissioned-at", "2025-10-01T00:00:00Z")

    assert "node: found" in out
    assert Node.objects.get().commissioned_at.isoformat() == "2025-10-01T00:00:00+00:00"


# The product's dated-input range (1970 to 3000, common.periods): the ledger adds a node's life to the date.
OUT_OF_RANGE = ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "9999-12-31T23:00:00Z", "1969-12-31T23:00Z"]


@pytest.mark.django_db
@pytest.mark.parametrize("value", OUT_OF_RANGE)
def test_commissioned_at_outside_the_range_is_refused_naming_it_and_changes_nothing(value):
    with pytest.raises(CommandError, match=r"--commissioned-at: .* must lie between 1970-01-01 and 3000-01-01"):
        enroll("--commissioned-at", value)

    assert not Organization.objects.exists()
    assert not Node.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("value", OUT_OF_RANGE)
def test_reenrolling_with_commissioned_at_outside_the_range_leaves_the_node_as_it_was(value):
    enroll("--commissioned-at", "2025-11-01T00:00:00Z")

    with pytest.raises(CommandError, match="--commissioned-at"):
        enroll("--commissioned-at", value)

    assert Node.objects.get().commissioned_at.isoformat() == "2025-11-01T00:00:00+00:00"
    assert NodeCredential.objects.filter(revoked_at__isnull=True).count() == 1


def with_option(name: str, value: str) -> list[str]:
    at = ARGS.index(name)
    return [*ARGS[:at], name, value, *ARGS[at + 2 :]]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("--hostname", "", "hostname: This field cannot be blank"),
        ("--hostname", "gpu\x0001", "hostname: Null characters are not allowed"),
        ("--hostname", "g" * 300, "hostname: Ensure this value has at most 253 characters"),
        ("--fleet", "f" * 201, "invalid fleet: name: Ensure this value has at most 200 characters"),
        ("--fleet", "", "invalid fleet: name: This field cannot be blank"),
        ("--site", "s" * 201, "invalid site: name: Ensure this value has at most 200 characters"),
        ("--organization", "A" * 201, "invalid organization: name: Ensure this value has at most 200 characters"),
    ],
)
def test_names_the_api_refuses_are_refused_naming_the_field_and_nothing_is_written(name, value, message):
    with pytest.raises(CommandError, match=message):
        call_command("enroll_node", *with_option(name, value), stdout=StringIO(), stderr=StringIO())

    assert not Organization.objects.exists()
    assert not Fleet.objects.exists()
    assert not Node.objects.exists()
    assert not NodeCredential.objects.exists()


@pytest.mark.django_db
def test_a_bad_hostname_for_an_existing_fleet_leaves_it_unchanged():
    enroll("--grid-zone", "DE")

    with pytest.raises(CommandError, match="hostname"):
        call_command("enroll_node", *with_option("--hostname", " " * 3 + "\x00"), stdout=StringIO())

    assert Node.objects.count() == 1 and NodeCredential.objects.count() == 1

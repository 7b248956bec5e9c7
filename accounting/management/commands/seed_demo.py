"""``manage.py seed_demo``: the demo organization and its admin login (idempotent)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from fleets.models import Membership, Role
from fleets.services import organization_get_or_create

DEMO_ORGANIZATION = "Demo AI"
DEMO_USERNAME = "admin"
DEMO_PASSWORD = "wattledger-demo"  # noqa: S105 - a local demo login, printed on purpose


class Command(BaseCommand):
    help = "Create the demo organization with an admin login. Safe to run again."

    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        organization, _ = organization_get_or_create(name=DEMO_ORGANIZATION)
        user, created = get_user_model().objects.get_or_create(
            username=DEMO_USERNAME, defaults={"is_staff": True, "is_superuser": True}
        )
        if created:
            user.set_password(DEMO_PASSWORD)
            user.save()
        Membership.objects.get_or_create(user=user, organization=organization, defaults={"role": Role.ADMIN})
        self.stdout.write(f"Demo organization: {organization.name}")
        self.stdout.write(f"Login: {DEMO_USERNAME} / {DEMO_PASSWORD}  (local demo only)")

"""The demo's workload classes (``demo.spec.WORKLOAD_CLASSES``) and their first advice.

Classes are created once: a class the user edited or deleted afterwards is
left as it is. The advice is refreshed after the history is in, so the advice
page has something to say on first start (Celery beat refreshes it hourly after).
"""

from __future__ import annotations

from datetime import datetime

from advice.models import WorkloadClass
from advice.services import advice_refresh
from demo import spec
from fleets.models import Organization
from telemetry.collector.simprofiles import LLMS


def demo_workload_classes_seed(*, organization: Organization) -> int:
    """Create the demo's classes that do not exist yet (by name); how many were created."""
    created = 0
    for item in spec.WORKLOAD_CLASSES:
        _, new = WorkloadClass.objects.get_or_create(
            organization=organization,
            name=item.name,
            defaults={
                "llm_model": LLMS[item.llm],
                "ttft_target_ms": item.ttft_target_ms,
                "ttft_percentile": item.ttft_percentile,
                "deadline_h": item.deadline_h,
                "expected_output_tokens_per_day": item.expected_output_tokens_per_day,
                "carbon_weight": item.carbon_weight,
            },
        )
        created += new
    return created


def demo_advice_refresh(*, organization: Organization, now: datetime) -> dict[str, int]:
    """Advice for every class of the organization from the history now stored."""
    return advice_refresh(organization_id=organization.pk, now=now)

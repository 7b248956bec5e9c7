from django.urls import path

from governance.api import AuditView, LockedPeriodDetailView, LockedPeriodsView

urlpatterns = [
    path("locked-periods/", LockedPeriodsView.as_view(), name="locked-periods"),
    path("locked-periods/<int:lock_id>/", LockedPeriodDetailView.as_view(), name="locked-period"),
    path("audit/", AuditView.as_view(), name="audit"),
]

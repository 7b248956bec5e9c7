from django.urls import path

from fleets.views import organization_switch

urlpatterns = [
    path("organization/", organization_switch, name="organization-switch"),
]

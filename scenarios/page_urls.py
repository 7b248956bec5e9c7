from django.urls import path

from scenarios.pages import scenario_page, scenario_run_page, scenarios_page

urlpatterns = [
    path("scenarios/", scenarios_page, name="scenarios-page"),
    path("scenarios/<int:scenario_id>/", scenario_page, name="scenario-page"),
    path("scenarios/<int:scenario_id>/run/", scenario_run_page, name="scenario-run-page"),
]

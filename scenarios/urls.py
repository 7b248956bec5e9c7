from django.urls import path

from scenarios.api import ScenarioDetailView, ScenarioResultView, ScenarioRunView, ScenariosView

urlpatterns = [
    path("scenarios/", ScenariosView.as_view(), name="scenarios"),
    path("scenarios/<int:scenario_id>/", ScenarioDetailView.as_view(), name="scenario"),
    path("scenarios/<int:scenario_id>/run/", ScenarioRunView.as_view(), name="scenario-run"),
    path("scenarios/<int:scenario_id>/result/", ScenarioResultView.as_view(), name="scenario-result"),
]

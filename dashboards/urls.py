from django.contrib.auth.decorators import login_required
from django.urls import path
from django.views.generic import RedirectView

from dashboards.api_tokens import api_tokens_page
from dashboards.compare import compare_page
from dashboards.finance import finance_page
from dashboards.nodes import node_page, nodes_page
from dashboards.sustainability import sustainability_page

urlpatterns = [
    path("", login_required(RedirectView.as_view(pattern_name="finance", query_string=True)), name="home"),
    path("finance/", finance_page, name="finance"),
    path("sustainability/", sustainability_page, name="sustainability"),
    path("compare/", compare_page, name="compare"),
    path("nodes/", nodes_page, name="nodes"),
    path("nodes/<int:node_id>/", node_page, name="node"),
    path("account/tokens/", api_tokens_page, name="api-tokens-page"),
]

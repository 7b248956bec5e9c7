from django.urls import path

from accounting.inputs.node_pages import node_tokens_page
from accounting.inputs.pages import node_prices_page

urlpatterns = [
    path("finance/prices/", node_prices_page, name="node-prices-page"),
    path("fleet/tokens/", node_tokens_page, name="node-tokens-page"),
]

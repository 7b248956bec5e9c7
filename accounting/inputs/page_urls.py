from django.urls import path

from accounting.inputs.pages import node_prices_page

urlpatterns = [
    path("finance/prices/", node_prices_page, name="node-prices-page"),
]

from django.urls import path

from accounting.inputs.api import (
    GpuAssetDetailView,
    GpuAssetsView,
    NodePriceDetailView,
    NodePricesView,
    SitePueView,
    SiteTariffDetailView,
    SiteTariffsView,
)
from accounting.inputs.depreciation_api import NodePriceBookValueView, NodePriceLifeChangesView
from accounting.inputs.journal_accounts import JournalAccountDetailView, JournalAccountsView
from accounting.inputs.nodes_api import NodeEnrollmentsView, NodeTokenDetailView, NodeTokensView
from accounting.inputs.rates_api import ExchangeRateDetailView, ExchangeRatesView, LedgerSettingsView
from accounting.inputs.site_api import (
    SiteMarketFactorDetailView,
    SiteMarketFactorsView,
    SitePuePeriodDetailView,
    SitePuePeriodsView,
    SiteTaxDetailView,
    SiteTaxesView,
)
from accounting.inputs.uploads_api import ExchangeRatesUploadView, NodePricesUploadView, UploadStatusView

urlpatterns = [
    path("node-prices/", NodePricesView.as_view(), name="node-prices"),
    path("node-prices/upload/", NodePricesUploadView.as_view(), name="node-prices-upload"),
    path("uploads/<int:upload_id>/", UploadStatusView.as_view(), name="upload"),
    path("node-prices/<int:price_id>/", NodePriceDetailView.as_view(), name="node-price"),
    path("node-prices/<int:price_id>/book-value/", NodePriceBookValueView.as_view(), name="node-price-book-value"),
    path(
        "node-prices/<int:price_id>/life-changes/", NodePriceLifeChangesView.as_view(), name="node-price-life-changes"
    ),
    path("exchange-rates/", ExchangeRatesView.as_view(), name="exchange-rates"),
    path("exchange-rates/upload/", ExchangeRatesUploadView.as_view(), name="exchange-rates-upload"),
    path("exchange-rates/<int:rate_id>/", ExchangeRateDetailView.as_view(), name="exchange-rate"),
    path("journal-accounts/", JournalAccountsView.as_view(), name="journal-accounts"),
    path("journal-accounts/<int:row_id>/", JournalAccountDetailView.as_view(), name="journal-account"),
    path("ledger-settings/", LedgerSettingsView.as_view(), name="ledger-settings"),
    path("site-tariffs/", SiteTariffsView.as_view(), name="site-tariffs"),
    path("site-tariffs/<int:tariff_id>/", SiteTariffDetailView.as_view(), name="site-tariff"),
    path("sites/<int:site_id>/pue/", SitePueView.as_view(), name="site-pue"),
    path("site-pue-periods/", SitePuePeriodsView.as_view(), name="site-pue-periods"),
    path("site-pue-periods/<int:row_id>/", SitePuePeriodDetailView.as_view(), name="site-pue-period"),
    path("site-market-factors/", SiteMarketFactorsView.as_view(), name="site-market-factors"),
    path("site-market-factors/<int:row_id>/", SiteMarketFactorDetailView.as_view(), name="site-market-factor"),
    path("site-taxes/", SiteTaxesView.as_view(), name="site-taxes"),
    path("site-taxes/<int:row_id>/", SiteTaxDetailView.as_view(), name="site-tax"),
    path("gpu-assets/", GpuAssetsView.as_view(), name="gpu-assets"),
    path("gpu-assets/<int:asset_id>/", GpuAssetDetailView.as_view(), name="gpu-asset"),
    path("node-enrollments/", NodeEnrollmentsView.as_view(), name="node-enrollments"),
    path("node-tokens/", NodeTokensView.as_view(), name="node-tokens"),
    path("node-tokens/<int:token_id>/", NodeTokenDetailView.as_view(), name="node-token"),
]

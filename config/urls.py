from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from config.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("", include("reports.exposition_urls")),
    # Browsers ask for /favicon.ico on pages without an icon link (the API docs): the same icon, never a 404.
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI, its assets served from our own static files (drf-spectacular-sidecar), no CDN. A page only:
    # GET and HEAD (OPTIONS would render its template without the page's context, a 500; it answers 405).
    path(
        "api/docs/",
        SpectacularSwaggerView.as_view(url_name="schema", http_method_names=["get", "head"]),
        name="api-docs",
    ),
    path("api/v1/", include("telemetry.urls")),
    path("api/v1/", include("grid.urls")),
    path("api/v1/", include("reports.urls")),
    path("api/v1/", include("fleets.api_urls")),
    path("api/v1/", include("scope2.urls")),
    path("api/v1/", include("accounting.inputs.urls")),
    path("api/v1/", include("governance.urls")),
    path("api/v1/", include("advice.urls")),
    path("api/v1/", include("scenarios.urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", include("fleets.urls")),
    path("", include("dashboards.urls")),
    path("", include("accounting.inputs.page_urls")),
    path("", include("advice.page_urls")),
    path("", include("scenarios.page_urls")),
]

# Errors under /api/ in JSON (config/api_errors.py), pages elsewhere.
handler400 = "config.api_errors.bad_request"
handler403 = "config.api_errors.permission_denied"
handler404 = "config.api_errors.page_not_found"
handler500 = "config.api_errors.server_error"

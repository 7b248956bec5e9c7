from django.urls import path

from fleets.tokens_api import PersonalTokenRevokeView, PersonalTokensView

urlpatterns = [
    path("tokens/", PersonalTokensView.as_view(), name="personal-tokens"),
    path("tokens/<int:token_id>/", PersonalTokenRevokeView.as_view(), name="personal-token-revoke"),
]

from django.urls import path

from advice.views import advice_page

urlpatterns = [
    path("advice/", advice_page, name="advice"),
]

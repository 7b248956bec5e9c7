from django.apps import AppConfig


class Scope2Config(AppConfig):
    name = "scope2"
    verbose_name = "Scope 2 (market instruments)"

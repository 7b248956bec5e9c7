from django.apps import AppConfig


class AdviceConfig(AppConfig):
    name = "advice"
    verbose_name = "Placement advice"

from django.apps import AppConfig


class GridConfig(AppConfig):
    name = "grid"
    verbose_name = "Grid intensity"

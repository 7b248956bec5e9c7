from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo organization, its simulated fleets and ``seed_demo``.

    It uses fleets, telemetry and accounting; none of them imports it.
    """

    name = "demo"
    verbose_name = "Demo"

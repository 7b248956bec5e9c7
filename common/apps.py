from django.apps import AppConfig
from django.db.backends.signals import connection_created


class CommonConfig(AppConfig):
    name = "common"
    verbose_name = "Common (tenancy scope, API kit, charts)"

    def ready(self) -> None:
        from common.pg_timestamps import utc_loader_register

        connection_created.connect(utc_loader_register, dispatch_uid="common.pg_timestamps")

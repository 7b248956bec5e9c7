import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_wsgi_application()

from telemetry.route import IngestRoute  # noqa: E402 - once Django is set up

# Valid collector batches are answered without Django's request cycle; all else goes to Django.
application = IngestRoute(django_application)

"""Django's PostgreSQL backend with health checks that cost nothing under load (see ``base``)."""

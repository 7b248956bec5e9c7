"""gunicorn's settings for Wattledger (``gunicorn -c config/gunicorn.conf.py config.wsgi``).

Threaded workers: a request stuck on a frozen database holds one thread, not the
whole process, and ``config.middleware.HealthReserved`` keeps one thread of each
process for ``/healthz`` (``WEB_THREADS``, the same variable the app reads).
"""

import os

bind = os.environ.get("WEB_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_WORKERS", "3"))
worker_class = "gthread"
threads = int(os.environ.get("WEB_THREADS", "8"))
timeout = int(os.environ.get("WEB_TIMEOUT_S", "30"))
accesslog = "-"


def post_worker_init(worker: object) -> None:
    """Once the worker has loaded the application: load every view and Plotly, and freeze them out of the
    garbage collector's full collections (``config.startup``)."""
    from config.startup import web_worker_ready

    web_worker_ready()

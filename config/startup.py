"""What a web worker does once, after Django is set up and before it serves its first request.

Every view module is imported (the URL conf resolved) and Plotly's figure classes loaded, then every object
alive (Django, the views, Plotly: about 200,000 on the bench) moves to the garbage collector's permanent
generation (``gc.freeze``). Python's cyclic collector otherwise scans all of them in each full collection,
which a page's allocations set off every few requests: ~140 ms added to that request on the bench
(bench/README.md). Frozen objects are never collected; what a worker holds at startup it keeps for its life
anyway. Python's documentation of ``gc.freeze`` describes the same use for forked server processes.

gunicorn's workers call it once the application is loaded (``post_worker_init`` in ``config/gunicorn.conf.py``,
which the image and the compose file use); ``bench.pages`` calls it so that it measures the same process. The
demo's development server does not.
"""

from __future__ import annotations

import gc


def web_worker_ready() -> int:
    """Load what requests would load lazily, then freeze the collector's view of it; return how many froze."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 (resolving the URL conf imports every view module)
    import plotly.graph_objects as go

    go.Figure(data=[go.Scatter(), go.Bar()]).to_json()  # its classes and validators are imported on first use

    gc.collect()  # leave startup's garbage out of the permanent generation
    gc.freeze()
    return gc.get_freeze_count()

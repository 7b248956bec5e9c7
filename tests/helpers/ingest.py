"""A batch posted to the ingest API as the collector posts it."""

from __future__ import annotations

import gzip

import orjson

URL = "/api/v1/ingest/"


def post(client, body, token, *, gzip_it=True, content_type="application/json", **headers):
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    if gzip_it:
        raw = gzip.compress(raw)
        headers["Content-Encoding"] = "gzip"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return client.post(URL, data=raw, content_type=content_type, headers=headers)

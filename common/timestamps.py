"""When a row was created and last changed, set by Django on save: one abstract base for the models that show both."""

from __future__ import annotations

from django.db import models


class Timestamped(models.Model):
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True

"""Accounting models, one module per concept; imported here so Django finds them."""

from accounting.models.grid import *  # noqa: F403

"""The grid tests' stand-in provider (``fake``), from tests.helpers.grid_provider."""

from tests.helpers.grid_provider import _fake_server, fake  # noqa: F401 (fixtures)

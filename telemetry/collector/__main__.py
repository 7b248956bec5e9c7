"""``python -m telemetry.collector``: see ``--help``."""

from .cli import main

raise SystemExit(main())

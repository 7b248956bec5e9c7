"""Accounting models, one module per concept; imported here so Django finds them."""

from accounting.advice.models import *  # noqa: F403
from accounting.grid.models import *  # noqa: F403
from accounting.inputs.models import *  # noqa: F403
from accounting.instruments.models import *  # noqa: F403
from accounting.models.hardware import *  # noqa: F403
from accounting.models.ledger import *  # noqa: F403
from accounting.models.prices import *  # noqa: F403
from accounting.scenarios.models import *  # noqa: F403

"""The ledger's models, one module per concept; imported here so Django finds them."""

from accounting.models.corrections import *  # noqa: F403
from accounting.models.hardware import *  # noqa: F403
from accounting.models.journal import *  # noqa: F403
from accounting.models.ledger import *  # noqa: F403
from accounting.models.prices import *  # noqa: F403
from accounting.models.rates import *  # noqa: F403
from accounting.models.uploads import *  # noqa: F403

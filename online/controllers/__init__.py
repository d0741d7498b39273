"""HTTP controllers, one per domain (turns, recall, tools, items, admin/health)."""

from online.controllers.admin import AdminController, HealthController
from online.controllers.items import ItemsController
from online.controllers.recall import RecallController
from online.controllers.tools import ToolsController
from online.controllers.turns import TurnsController

CONTROLLERS = [
    HealthController,
    AdminController,
    TurnsController,
    RecallController,
    ToolsController,
    ItemsController,
]

__all__ = ["CONTROLLERS", *[c.__name__ for c in CONTROLLERS]]

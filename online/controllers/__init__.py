"""HTTP controllers, one per domain (turns, recall, tools, items, the review queue, admin/health, the /ui browser)."""

from online.controllers.admin import AdminController, HealthController
from online.controllers.items import ItemsController
from online.controllers.recall import RecallController
from online.controllers.review import ReviewController
from online.controllers.tools import ToolsController
from online.controllers.turns import TurnsController
from online.controllers.ui import UIController

CONTROLLERS = [
    HealthController,
    AdminController,
    TurnsController,
    RecallController,
    ToolsController,
    ItemsController,
    ReviewController,
    UIController,
]

__all__ = ["CONTROLLERS", *[c.__name__ for c in CONTROLLERS]]

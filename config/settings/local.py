"""Developer and demo settings: embedded defaults, debug pages."""
from config.settings.base import *  # noqa: F403
from config.settings.base import env

DEBUG = env.bool("DEBUG", default=True)

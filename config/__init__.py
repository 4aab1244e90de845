"""Concord project configuration. Importing the Celery app here makes `shared_task` bind to it."""
from config.celery import app as celery_app

__all__ = ("celery_app",)

"""Integration tests run against real PostgreSQL and Redis (set DATABASE_URL and CELERY_BROKER_URL;
.ci/run does where the services answer). Without them every test here is skipped with the reason."""
import os

import pytest

NEEDS = []
if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
    NEEDS.append("DATABASE_URL=postgres://...")
if not os.environ.get("CELERY_BROKER_URL", "").startswith("redis://"):
    NEEDS.append("CELERY_BROKER_URL=redis://...")


def pytest_collection_modifyitems(config, items):
    if not NEEDS:
        return
    skip = pytest.mark.skip(reason=f"integration tests need {' and '.join(NEEDS)}")
    for item in items:
        if "integration" in item.keywords:
            item.add_marker(skip)

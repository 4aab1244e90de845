"""Root pytest configuration: shared fixtures for every test package."""
import pytest


@pytest.fixture(autouse=True)
def _isolated_media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture(autouse=True)
def _empty_cache():
    """Reports are cached by a version of their data; a rolled-back test can leave ids that a later
    test reuses, so every test starts and ends with an empty cache."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()

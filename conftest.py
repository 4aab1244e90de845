"""Root pytest configuration: shared fixtures for every test package."""
import pytest


@pytest.fixture(autouse=True)
def _isolated_media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"

"""Raters' per-experiment pseudonyms, the one name reports, exports and designs show for a rater."""
from __future__ import annotations

import hashlib
import hmac

from django.conf import settings


def rater_pseudonym(experiment_id: int, rater_id: int) -> str:
    """A stable per-experiment pseudonym for a rater, e.g. ``R-3f9a2c1b``: an HMAC-SHA256 (keyed by the
    site's secret key) of the experiment and rater ids, so the same worker gets unrelated names in two
    experiments and nobody without the key can map a pseudonym back to a platform id. Eight hex digits
    keep collisions unlikely (about 1 in 10,000 for 1,000 raters in one experiment)."""
    message = f"concord-rater:{experiment_id}:{rater_id}".encode()
    return "R-" + hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).hexdigest()[:8]

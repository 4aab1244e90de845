"""Which sites may show the rater pages inside a frame.

Mechanical Turk shows an ExternalQuestion HIT in a cross-site iframe on its worker sites, so the
rater pages (and only they) answer with a complete ``Content-Security-Policy: frame-ancestors ...``
header naming MTurk's sites plus the deployment's ``CONCORD_FRAME_ANCESTORS``, and without
``X-Frame-Options``. Every other page keeps Django's ``X-Frame-Options: DENY``. By convention a
site-wide CSP middleware leaves a response alone when it already carries a CSP header, so the
policy set here is the whole policy of a rater page.
"""
from __future__ import annotations

import re
from functools import wraps
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from studies.rating.platforms import MTURK_SUBMIT_HOSTS

MTURK_FRAME_ANCESTORS = (
    "https://worker.mturk.com",
    "https://workersandbox.mturk.com",
    "https://www.mturk.com",
    "https://requester.mturk.com",
    "https://requestersandbox.mturk.com",
)
# scheme://host[:port], host may start with a "*." wildcard (CSP source expression); nothing that
# could end the directive (";", ",", spaces, quotes).
_ORIGIN = re.compile(r"^https?://(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?$")

# Scripts and styles come from this site only (images also over https, for instructions); forms
# post to this site or to MTurk's externalSubmit (the done page); nothing else is needed.
_RATER_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; connect-src 'self'; "
    f"form-action 'self' {' '.join(MTURK_SUBMIT_HOSTS)}; base-uri 'none'; object-src 'none'"
)


def frame_ancestors() -> list[str]:
    """'self', MTurk's sites, then the configured origins (checked, so a typo cannot widen the policy)."""
    extra = []
    for origin in settings.CONCORD_FRAME_ANCESTORS:
        origin = origin.strip().rstrip("/")
        if not _ORIGIN.match(origin):
            raise ImproperlyConfigured(f"CONCORD_FRAME_ANCESTORS: {origin!r} is not an origin like https://host[:port]")
        extra.append(origin)
    return ["'self'", *MTURK_FRAME_ANCESTORS, *dict.fromkeys(extra)]


def _origin_allowed(origin: str, source: str) -> bool:
    """Whether ``origin`` (scheme://host[:port]) matches a CSP host source (a "*." wildcard matches
    subdomains only, as in CSP Level 3 §6.7.2.5)."""
    if source.startswith("'"):
        return False  # 'self' is checked by the caller (a same-origin load)
    scheme, _, rest = source.partition("://")
    o_scheme, _, o_rest = origin.partition("://")
    if scheme != o_scheme:
        return False
    if rest.startswith("*."):
        return o_rest.endswith(rest[1:]) and len(o_rest) > len(rest) - 1
    return o_rest == rest


UNKNOWN_FRAMER = "an unknown site"


def _framed_by_another_site(request) -> bool:
    """The browser says it loads the page into a frame (``Sec-Fetch-Dest: iframe``, Fetch Metadata) on
    behalf of another site (``Sec-Fetch-Site``). A navigation the page itself starts inside the frame (a
    link on it) is same-origin."""
    meta = request.META
    return meta.get("HTTP_SEC_FETCH_DEST") in ("iframe", "frame") and meta.get("HTTP_SEC_FETCH_SITE") not in (
        None, "same-origin", "none")


def refused_framer(request) -> str | None:
    """The origin of a cross-site frame that the rater pages' frame-ancestors forbids,
    ``UNKNOWN_FRAMER`` for a cross-site frame that sent no Referer, or None.

    The Referer says which page frames it (the origin at least, under the default
    strict-origin-when-cross-origin policy). A forbidden framer's load will not be shown, so the entry
    must store nothing for it. A framer with ``Referrer-Policy: no-referrer`` hides itself: it may be one
    the policy allows or not, so the entry stores nothing either and answers with a page that starts the
    task from a link (``raters/framed_start.html``); the browser shows that page only where
    frame-ancestors allows it, and the link's load is same-origin."""
    if not _framed_by_another_site(request):
        return None
    parts = urlsplit(request.META.get("HTTP_REFERER", ""))
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return UNKNOWN_FRAMER
    origin = f"{parts.scheme}://{parts.netloc.rpartition('@')[2].lower()}"
    if any(_origin_allowed(origin, source.lower()) for source in frame_ancestors()):
        return None
    return origin


def rater_policy() -> str:
    return f"{_RATER_POLICY}; frame-ancestors {' '.join(frame_ancestors())}"


def frameable_by_platforms(view):
    """Let the platforms' sites frame this view's responses: a complete CSP with frame-ancestors, and
    no X-Frame-Options (XFrameOptionsMiddleware skips responses marked exempt)."""
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        response["Content-Security-Policy"] = rater_policy()
        response.xframe_options_exempt = True
        return response
    return wrapped

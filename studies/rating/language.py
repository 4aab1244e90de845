"""The rater pages' language: the study's (``Study.language``), or the rater's browser language where the
study allows it (``Study.language_from_browser``) and the pages have it (settings.LANGUAGES).

Only the rater's addresses (``/r/`` pages, ``/api/rate/`` API) are translated; the language is active
for that one request (``translation.override``), so researcher pages and other threads stay English. The
loaders that read a rater's study (its assignment, practice attempt, link) activate its language through
``rater_language_use``: the study is read once, with everything else the page needs."""
from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from django.conf import settings
from django.utils import translation
from django.utils.cache import patch_vary_headers

from studies.models import Study

RATER_PREFIXES = ("/r/", "/api/rate/")
DEFAULT_LANGUAGE = "en"


def language_codes() -> list[str]:
    """The languages rater pages have catalogues for (settings.LANGUAGES), English first."""
    return [code for code, _ in settings.LANGUAGES]


def language_choices() -> list[tuple[str, str]]:
    return list(settings.LANGUAGES)


def browser_language(accept_language: str) -> str | None:
    """The first language of an Accept-Language header (by its q weights) that rater pages have, else None."""
    for code, _weight in translation.trans_real.parse_accept_lang_header(accept_language or ""):
        if code == "*":
            continue
        try:
            found = translation.get_supported_language_variant(code)
        except LookupError:
            continue
        if found in language_codes():
            return found
    return None


def study_rater_language(study: Study | None, accept_language: str = "") -> str:
    """The language a rater of ``study`` reads: the browser's where the study allows it and we have it,
    else the study's; English without a study (or with a language no longer shipped)."""
    if study is None:
        return DEFAULT_LANGUAGE
    if study.language_from_browser:
        found = browser_language(accept_language)
        if found:
            return found
    return study.language if study.language in language_codes() else DEFAULT_LANGUAGE


@dataclass
class _RaterRequest:
    """What the middleware knows of a rater request, and what the loaders decided (for the headers)."""

    accept_language: str
    language: str | None = None
    from_browser: bool = False


_CURRENT: ContextVar[_RaterRequest | None] = ContextVar("concord_rater_request", default=None)


def rater_language_use(study: Study | None) -> str | None:
    """Activate ``study``'s rater language for the rest of this rater request (the loaders of the rater
    pages and API call it once they hold the study, so it costs no query of its own); the middleware
    undoes it when the request ends. Outside a rater request (a researcher's preview, a task) nothing
    changes and None is returned."""
    current = _CURRENT.get()
    if current is None or study is None:
        return None
    current.language = study_rater_language(study, current.accept_language)
    current.from_browser = study.language_from_browser
    translation.activate(current.language)
    return current.language


def conditions_language_use(studies: list[Study]) -> str | None:
    """An experiment link's page: its conditions' language where they share one (else English)."""
    settings_of = {(s.language, s.language_from_browser) for s in studies}
    return rater_language_use(studies[0]) if len(settings_of) == 1 else None


class RaterLanguageMiddleware:
    """Rater addresses (``/r/``, ``/api/rate/``) start each request in English and in a fresh state for
    ``rater_language_use``, and end it with the language they had before (nothing leaks to the thread's
    next request); the answer says which language it is in (``Content-Language``; ``Vary:
    Accept-Language`` where the study lets the browser choose)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path_info.startswith(RATER_PREFIXES):
            return self.get_response(request)
        state = _RaterRequest(accept_language=request.headers.get("Accept-Language", ""))
        token = _CURRENT.set(state)
        try:
            with translation.override(DEFAULT_LANGUAGE):
                response = self.get_response(request)
        finally:
            _CURRENT.reset(token)
        response.headers.setdefault("Content-Language", state.language or DEFAULT_LANGUAGE)
        if state.from_browser:
            patch_vary_headers(response, ("Accept-Language",))
        return response

"""The rater pages' language: the study's (``Study.language``), or the rater's browser language where the
study allows it (``Study.language_from_browser``) and the pages have it (settings.LANGUAGES).

Only the rater's addresses (``/r/`` pages, ``/api/rate/`` API) are translated; the language is active
for that one request (``translation.override``), so researcher pages and other threads stay English."""
from __future__ import annotations

from django.conf import settings
from django.urls import Resolver404, resolve
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


def _study_of_route(path: str) -> Study | None:
    """The study a rater address belongs to, from the route's own keys (assignment or practice token,
    study slug or rater key, experiment slug: its conditions' language when they share one)."""
    try:
        match = resolve(path)
    except Resolver404:
        return None
    kwargs = match.kwargs
    fields = ("language", "language_from_browser")
    if "token" in kwargs:
        practice = "/p/" in path or "/practice/" in path
        lookup = "practice_attempts__token" if practice else "assignments__token"
        return Study.objects.filter(**{lookup: kwargs["token"]}).only(*fields).first()
    if "key" in kwargs:
        return Study.objects.filter(rater_key=kwargs["key"]).only(*fields).first()
    if "slug" in kwargs:
        if "/x/" in path or "/experiments/" in path:
            studies = list(Study.objects.filter(experiment__slug=kwargs["slug"]).only(*fields)[:50])
            languages = {(s.language, s.language_from_browser) for s in studies}
            return studies[0] if len(languages) == 1 else None
        return Study.objects.filter(slug=kwargs["slug"]).only(*fields).first()
    return None


class RaterLanguageMiddleware:
    """Activates the rater language for a rater address for this request only, and says which it is
    (``Content-Language``; ``Vary: Accept-Language`` where the browser chose)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path_info.startswith(RATER_PREFIXES):
            return self.get_response(request)
        study = _study_of_route(request.path_info)
        language = study_rater_language(study, request.headers.get("Accept-Language", ""))
        with translation.override(language):
            request.LANGUAGE_CODE = language
            response = self.get_response(request)
        response.headers.setdefault("Content-Language", language)
        if study is not None and study.language_from_browser:
            patch_vary_headers(response, ("Accept-Language",))
        return response

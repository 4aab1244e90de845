"""The rater pages' translations are complete and current: no rater template shows words outside the
translation tags, every shipped catalogue translates every message (no empty or fuzzy entry), keeps each
placeholder and markup of the English, holds exactly the messages the code marks today, and its compiled
.mo says what its .po says. Read without GNU gettext (tests.studies.i18n_sources)."""
import re

import pytest
from django.utils import translation

from studies.rating.js_strings import JS_STRINGS, js_strings
from tests.studies import i18n_sources as sources

PYTHON_FORMAT = re.compile(r"%\((\w+)\)[sd]")
BRACE_FORMAT = re.compile(r"{(\w+)}")
MARKUP = re.compile(r"<[^>]+>")


def entries(language):
    return sources.po_entries(sources.catalogue_path(language))[1]


def test_translation_rater_templates_are_listed():
    names = {p.relative_to(sources.ROOT / "templates" / "raters").as_posix() for p in sources.RATER_TEMPLATES}
    assert {"base.html", "start.html", "item.html", "chat.html", "done.html", "_acute.html", "_pay.html",
            "practice_feedback.html", "practice_result.html", "questionnaire.html", "designs/likert.html",
            "kinds/multilabel.html"} <= names


@pytest.mark.parametrize("path", sources.RATER_TEMPLATES, ids=lambda p: p.name)
def test_translation_no_rater_template_shows_text_outside_the_translation_tags(path):
    assert sources.untranslated_text(path.read_text(encoding="utf-8")) == []


def test_translation_template_check_finds_new_words_text_and_attributes():
    """The check above can fail: a new sentence, a new button, a new aria-label are each caught, while
    markup, variables, tags, numbers and punctuation are not words."""
    source = ('{% load i18n %}<p>{% translate "Fine" %} {{ value }} 1–6 · ⠿ …</p>{# a comment #}'
              '<button aria-label="{% translate \'Close\' %}">×</button>'
              '{% blocktranslate %}Also {{ fine }}{% endblocktranslate %}')
    assert sources.untranslated_text(source) == []
    assert sources.untranslated_text(source + "<p>Please wait</p>") == ["Please wait"]
    assert sources.untranslated_text('<span aria-label="Close the box">×</span>') == ["Close the box"]
    assert sources.untranslated_text('<button title="Drag">⠿</button>') == ["Drag"]


@pytest.mark.parametrize("language", sources.TRANSLATED_LANGUAGES)
def test_translation_catalogue_is_complete_and_not_fuzzy(language):
    header, messages = sources.po_entries(sources.catalogue_path(language))
    assert "fuzzy" not in header.flags
    assert f"Language: {language}" in header.msgstr[0]
    untranslated = [m.msgid for m in messages if not m.msgstr or not all(m.msgstr.values())]
    fuzzy = [m.msgid for m in messages if "fuzzy" in m.flags]
    assert untranslated == [] and fuzzy == []
    plurals = int(re.search(r"nplurals=(\d+)", header.msgstr[0]).group(1))
    assert all(len(m.msgstr) == plurals for m in messages if m.msgid_plural)


@pytest.mark.parametrize("language", sources.TRANSLATED_LANGUAGES)
def test_translation_keeps_every_placeholder_and_markup(language):
    for message in entries(language):
        english = message.msgid + (message.msgid_plural or "")
        for form in message.msgstr.values():
            for pattern in (PYTHON_FORMAT, BRACE_FORMAT):
                assert set(pattern.findall(form)) <= set(pattern.findall(english)), (message.msgid, form)
                if not message.msgid_plural:
                    assert set(pattern.findall(form)) == set(pattern.findall(english)), (message.msgid, form)
            assert sorted(MARKUP.findall(form)) == sorted(MARKUP.findall(message.msgid)), (message.msgid, form)
            assert form != message.msgid or not re.search(r"[A-Za-z]{3}", form) or form in ("Chat", "No"), form


@pytest.mark.parametrize("language", sources.TRANSLATED_LANGUAGES)
def test_translation_catalogue_is_up_to_date_with_the_code(language):
    """Every message the templates and the code mark is in the catalogue, and nothing else is."""
    shipped = {m.msgid for m in entries(language)} | {m.msgid_plural for m in entries(language) if m.msgid_plural}
    marked = sources.all_msgids()
    assert marked - shipped == set(), "run make messages (makemessages) and translate the new entries"
    assert shipped - marked == set(), "the catalogue keeps messages the code no longer has"


@pytest.mark.parametrize("language", sources.TRANSLATED_LANGUAGES)
def test_translation_compiled_catalogue_matches_its_source(language):
    mo = sources.compiled(language)
    for message in entries(language):
        if message.msgid_plural:
            for n in (1, 2, 5, 11, 100):
                assert mo.ngettext(message.msgid, message.msgid_plural, n) in message.msgstr.values()
        else:
            assert mo.gettext(message.msgid) == message.msgstr[0], message.msgid


def test_translation_every_script_text_is_served_to_the_page():
    assert sources.script_texts() == set(JS_STRINGS)
    with translation.override("es"):
        served = js_strings()
    assert served["Saved"] == "Guardado"
    assert set(served) == set(JS_STRINGS)


def test_translation_script_placeholders_survive_in_every_language():
    for language in sources.TRANSLATED_LANGUAGES:
        with translation.override(language):
            served = js_strings()
        for english, text in served.items():
            assert set(BRACE_FORMAT.findall(text)) == set(BRACE_FORMAT.findall(english)), (language, english)

"""The words the rater pages' scripts (static/concord/rater*.js, chat.js, scroll_regions.js) show, keyed by
their English text: rendered into every rater page as JSON in the page's language (``{% rater_js_strings %}``),
read by the scripts' ``t(text)``, which falls back to the English key. Placeholders are ``{name}``; the
scripts fill them in. No JavaScript catalogue is downloaded: the page carries what it needs."""
from django.utils.translation import gettext, gettext_noop

JS_STRINGS = (  # every t("...") text of the rater scripts (tests/studies/test_i18n_catalogues.py checks)
    gettext_noop("Rate the conversation"),
    gettext_noop("The message could not be sent."),
    gettext_noop("The connection was lost. Your message is kept in the box: send it again when you are back online."),
    gettext_noop("Type a message first."),
    gettext_noop("No characters left (at most {max})."),
    gettext_noop("{left} characters left."),
    gettext_noop("That did not work."),
    gettext_noop("The connection was lost; please try again."),
    gettext_noop("Not saved yet — offline; will be sent when the connection is back"),
    gettext_noop("Saving…"),
    gettext_noop("Not saved — your answers are still on this page"),
    gettext_noop("Draft saved (not submitted): please fix the marked answers"),
    gettext_noop("Saved"),
    gettext_noop("give a value for this response"),
    gettext_noop("“{text}” is ambiguous: write {whole} for a whole number, or use a point for decimals"),
    gettext_noop("write {fixed} with a point, not a comma"),
    gettext_noop("“{text}” is not a number: type digits, e.g. 40 or 12.5"),
    gettext_noop("must not be negative: use a number from {low} to {high}"),
    gettext_noop("use a number from {low} to {high}"),
    gettext_noop("pick a point for this response"),
    gettext_noop("rank this response"),
    gettext_noop("ranks must be 1..{size}, each used once (no ties)"),
    gettext_noop("pick one of the labels for this response"),
    gettext_noop("“None of these” cannot go with other labels"),
    gettext_noop("tick the labels that apply, or “None of these”"),
    gettext_noop("tick at least one label"),
    gettext_noop("say why in a few words"),
    gettext_noop("write at most {high} characters (now {n})"),
    gettext_noop("write something here"),
    gettext_noop("write at least {low} characters (now {n})"),
    gettext_noop("1 answer needs attention; it is marked below."),
    gettext_noop("{count} answers need attention; they are marked below."),
    gettext_noop("The connection is gone. Your answers are kept on this page; it goes "
                 "on to the next item as soon as the connection is back."),
    gettext_noop("pick the best and the worst response"),
    gettext_noop("pick the best response"),
    gettext_noop("pick the worst response"),
    gettext_noop("the best and the worst must differ"),
    gettext_noop("Some answers need attention (marked in red)."),
    gettext_noop("Pick an answer for every question (marked in red), with a reason."),
    gettext_noop("Pick an answer for every question (marked in red)."),
    gettext_noop("{heading} (scrolls sideways)"),
    gettext_noop("Scrolls sideways"),
    # span marking (rater_spans.js)
    gettext_noop("Remove"),
    gettext_noop("Remove the span “{text}”"),
    gettext_noop("Nothing to mark (confirmed)."),
    gettext_noop("word {n} of {count}: {text}"),
    gettext_noop(", marked {label}"),
    gettext_noop("mark the spans, or confirm there is nothing to mark"),
)


def js_strings() -> dict[str, str]:
    """Each script text in the active language, keyed by its English text."""
    return {text: gettext(text) for text in JS_STRINGS}

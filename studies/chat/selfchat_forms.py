"""The self-chat form (``selfchat_views``): a field for every setting, as the chat study form has (each
bot's personas, system prompt, temperature, top-p, max tokens, request rate), the corpus to fill (a new
one or a self-chat corpus of the researcher's own), the opening contexts and the seed of the draws.
``selfchat_create_kwargs`` turns the cleaned form into ``selfchat.selfchat_create``'s arguments and
``form_field_of`` the service's error keys (``bot_settings.a.temperature``) into the form's fields."""
from __future__ import annotations

from typing import Any

from django import forms

from studies.chat import selfchat

SIDES = {"a": "Bot A", "b": "Bot B"}
NEW_CORPUS = ""


def _lines(text: str) -> list[str]:
    """One entry per non-blank line (a blank line between entries is not an empty entry)."""
    return [line for line in (text or "").splitlines() if line.strip()]


def _bot_fields(side: str) -> dict[str, forms.Field]:
    bot = SIDES[side]
    return {
        f"{side}_personas": forms.CharField(
            label=f"{bot}: personas", required=False, widget=forms.Textarea(attrs={"rows": 3}),
            help_text="One per line; each conversation draws one (seeded, each used as often as the others). "
                      "Blank: none. Sent after the system prompt."),
        f"{side}_system_prompt": forms.CharField(label=f"{bot}: system prompt", max_length=4000, required=False,
                                                 widget=forms.Textarea(attrs={"rows": 2})),
        f"{side}_temperature": forms.FloatField(label=f"{bot}: temperature", min_value=0, max_value=2, required=False,
                                                help_text="0 to 2; blank: the endpoint's default."),
        f"{side}_top_p": forms.FloatField(label=f"{bot}: top-p", min_value=0, max_value=1, required=False),
        f"{side}_max_tokens": forms.IntegerField(label=f"{bot}: max tokens per reply", min_value=1, max_value=32000,
                                                 required=False),
        f"{side}_requests_per_minute": forms.IntegerField(
            label=f"{bot}: requests per minute", min_value=0, max_value=6000, required=False,
            help_text="Spaces the calls to its endpoint; blank or 0: no limit."),
    }


class SelfChatForm(forms.Form):
    title = forms.CharField(max_length=200, help_text="Names the run (and the new corpus).")
    corpus = forms.ChoiceField(label="Corpus", required=False,
                               help_text="Where the conversations go: put the self-chats of every bot you want to "
                                         "compare into one corpus, then build one ACUTE-Eval study on it.")
    system_a = forms.ChoiceField(label="Bot A (judged in ACUTE-Eval)")
    system_b = forms.ChoiceField(label="Bot B (its partner; the same bot for a self-chat)")
    openers = forms.CharField(label="Opening contexts", widget=forms.Textarea(attrs={"rows": 4}),
                              help_text="One per line; each conversation draws one, which bot B says first.")
    conversations = forms.IntegerField(min_value=1, max_value=10000, initial=20)
    turns = forms.IntegerField(label="Bot turns per conversation", min_value=1, max_value=100, initial=6,
                               help_text="After the opening context.")
    seed = forms.IntegerField(min_value=0, max_value=2**31 - 1, required=False,
                              help_text="Seeds the draws. Blank: the corpus's first run's seed (so every bot meets "
                                        "the same contexts), else 0.")

    def __init__(self, *args, systems: list[str], corpora: list[tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        choices = [(s, s) for s in systems]
        self.fields["system_a"].choices = self.fields["system_b"].choices = choices
        self.fields["corpus"].choices = [(NEW_CORPUS, "A new corpus (named by the title)"), *corpora]

    @property
    def bot_a_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in _bot_fields("a")]

    @property
    def bot_b_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in _bot_fields("b")]

    def run_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.fields if not name.startswith(("a_", "b_"))]


# Each bot's fields, after the run's (the same set twice, so built rather than written out).
SelfChatForm.base_fields.update({**_bot_fields("a"), **_bot_fields("b")})


def selfchat_create_kwargs(data: dict[str, Any]) -> dict[str, Any]:
    """``selfchat_create``'s arguments (all but the owner and the corpus) from the cleaned form."""
    settings = {side: {key: data[f"{side}_{key}"] for key in selfchat.BOT_SETTINGS
                       if data.get(f"{side}_{key}") not in (None, "")} for side in SIDES}
    personas = {side: _lines(data.get(f"{side}_personas", "")) for side in SIDES}
    return {"title": data["title"], "system_a": data["system_a"], "system_b": data["system_b"],
            "openers": _lines(data["openers"]), "conversations": data["conversations"], "turns": data["turns"],
            "seed": data.get("seed"), "bot_settings": settings,
            "personas": {side: lines for side, lines in personas.items() if lines}}


def form_field_of(key: str) -> str:
    """The form field a service error key names: ``bot_settings.a.temperature`` → ``a_temperature``,
    ``personas.b`` → ``b_personas``."""
    parts = key.split(".")
    if parts[0] == "bot_settings" and len(parts) == 3:
        return f"{parts[1]}_{parts[2]}"
    if parts[0] == "personas" and len(parts) == 2:
        return f"{parts[1]}_personas"
    return key

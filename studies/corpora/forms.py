"""The dialogue import page's form."""
from __future__ import annotations

from django import forms

from studies.corpora.importing.formats import FORMATS
from studies.corpora.importing.parsers import FORMAT_NAMES


class ImportForm(forms.Form):
    file = forms.FileField(help_text="Concord JSON lines or CSV, DailyDialog++, GRADE, FED/DSTC10 (turn or dialogue "
                                     "level), DSTC9 interactive-evaluation JSON, or ParlAI's ACUTE-Eval pairings, "
                                     "self-chat and model-chat logs, a Label Studio task export (with its annotations), or a "
                                     "Potato data file.")
    format = forms.ChoiceField(choices=[("auto", "Detect"), *[(f, FORMAT_NAMES.get(f, f)) for f in FORMATS]],
                               initial="auto")
    corpus = forms.SlugField(required=False, help_text="Name for the imported corpus (default: the file name).")
    systems = forms.CharField(required=False, help_text="Comma-separated system names the file may use, if "
                                                        "it does not declare them.")
    judged_speaker = forms.CharField(
        required=False, max_length=100, label="Speaker to judge",
        help_text="Whole dialogues (ParlAI logs): the speaker whose turns raters judge, wherever a conversation has "
                  "it. Blank: the file's (ParlAI's speakers_to_eval, a self-chat's first speaker, a model chat's bot).")

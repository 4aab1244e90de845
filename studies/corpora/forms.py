"""The dialogue import page's form."""
from __future__ import annotations

from django import forms

from studies.corpora.importing.formats import FORMATS


class ImportForm(forms.Form):
    file = forms.FileField(help_text="Concord JSON lines or CSV, DailyDialog++, GRADE, FED/DSTC10 (turn or dialogue "
                                     "level) or DSTC9 interactive-evaluation JSON.")
    format = forms.ChoiceField(choices=[("auto", "Detect"), *[(f, f) for f in FORMATS]], initial="auto")
    corpus = forms.SlugField(required=False, help_text="Name for the imported corpus (default: the file name).")
    systems = forms.CharField(required=False, help_text="Comma-separated system names the file may use, if "
                                                        "it does not declare them.")

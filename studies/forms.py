"""Researcher forms. They only collect and type-check input; services validate and write."""
from django import forms

from studies.designs import DESIGN_EXPLANATIONS
from studies.importing.formats import FORMATS
from studies.models import Design, Study, Unit


class ExperimentForm(forms.Form):
    title = forms.CharField(max_length=200)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)


class InviteForm(forms.Form):
    label = forms.CharField(max_length=120, required=False, help_text="Whom it is for (only you see it).")
    expires_in_days = forms.IntegerField(min_value=1, max_value=365, initial=14, help_text="Days the link can be opened.")


class StudyForm(forms.Form):
    title = forms.CharField(max_length=200)
    design = forms.ChoiceField(
        choices=Design.choices, widget=forms.RadioSelect,
        help_text=" ".join(f"{Design(k).label}: {v}" for k, v in DESIGN_EXPLANATIONS.items()),
    )
    unit = forms.ChoiceField(
        choices=Unit.choices, initial=Unit.RESPONSE, widget=forms.RadioSelect, label="Unit of judgement", required=False,
        help_text="Response: raters judge candidate next turns of a conversation. Dialogue: raters read a whole "
                  "conversation and rate it (Likert or RME; the items are the corpus's conversations).",
    )
    criteria = forms.CharField(
        initial="readability, coherence", help_text="Comma-separated criterion names; each gets its own question.",
    )
    raters_per_item = forms.IntegerField(min_value=1, initial=40, help_text="Target number of raters for every item.")
    items_per_assignment = forms.IntegerField(min_value=1, initial=50, help_text="Items one rater judges.")
    likert_points = forms.IntegerField(min_value=2, max_value=11, initial=6, required=False,
                                       help_text="Likert only: points on the scale (the seed study used 6).")
    likert_labels = forms.CharField(required=False, help_text="Likert only: one label per point, separated by |.")
    me_reference_value = forms.IntegerField(min_value=1, initial=100, required=False,
                                            help_text="RME only: the value shown with the reference response.")
    me_max = forms.IntegerField(min_value=1, initial=999, required=False,
                                help_text="RME/BME: the largest value a rater may give (smallest is 0).")
    bws_tuple_size = forms.IntegerField(min_value=2, max_value=10, initial=4, required=False,
                                        help_text="BWS only: responses ranked per item.")
    platform = forms.ChoiceField(choices=[c for c in Study.Platform.choices if c[0] != "benchmark"])
    instructions = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}), required=False,
                                   help_text="Markdown shown to raters before the first item.")

    def clean_unit(self) -> str:
        return self.cleaned_data.get("unit") or Unit.RESPONSE  # not given: responses, as before units existed

    def design_config(self) -> dict:
        data, design = self.cleaned_data, self.cleaned_data["design"]
        if design == Design.LIKERT:
            labels = [s.strip() for s in (data.get("likert_labels") or "").split("|") if s.strip()]
            return {"points": data.get("likert_points") or 6, "labels": labels}
        if design == Design.RME:
            return {"reference_value": data.get("me_reference_value") or 100, "min": 0, "max": data.get("me_max") or 999}
        if design == Design.BME:
            return {"min": 0, "max": data.get("me_max") or 999}
        return {"tuple_size": data.get("bws_tuple_size") or 4}

    def criteria_names(self) -> list[str]:
        return [c.strip() for c in self.cleaned_data["criteria"].split(",") if c.strip()]


class ImportForm(forms.Form):
    file = forms.FileField(help_text="Concord JSON lines or CSV, DailyDialog++, GRADE, FED/DSTC10 (turn or dialogue "
                                     "level) or DSTC9 interactive-evaluation JSON.")
    format = forms.ChoiceField(choices=[("auto", "Detect"), *[(f, f) for f in FORMATS]], initial="auto")
    corpus = forms.SlugField(required=False, help_text="Name for the imported corpus (default: the file name).")
    systems = forms.CharField(required=False, help_text="Comma-separated system names the file may use, if "
                                                        "it does not declare them.")


class ItemsBuildForm(forms.Form):
    corpus = forms.ChoiceField(choices=())
    systems = forms.CharField(required=False, help_text="Comma-separated; empty = every system except the reference.")
    reference_system = forms.SlugField(required=False, help_text="The human reference (anchor for RME/BME; for a "
                                                                 "dialogue study, its first dialogue is the RME anchor).")
    limit = forms.IntegerField(min_value=1, required=False, help_text="Sample this many conversations (seeded).")

    def __init__(self, *args, corpora=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["corpus"].choices = [(c.slug, c.slug) for c in corpora]

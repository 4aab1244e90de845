"""Input and output serializers, kept next to the API views that use them."""
from datetime import datetime

from rest_framework import serializers

from studies.api.inputs import StrictInput
from studies.api.schema_fields import DesignConfigField
from studies.corpora.importing.formats import FORMATS
from studies.designs import KINDS
from studies.models import Design, Study, Unit
from studies.rating import allocation, invites, review


class CriterionSerializer(StrictInput):
    name = serializers.SlugField()
    question = serializers.CharField(required=False, allow_blank=True)
    help_text = serializers.CharField(required=False, allow_blank=True)
    # How it is answered (studies.designs.kinds); the kind's options are checked by the service, per field.
    kind = serializers.ChoiceField(choices=list(KINDS), required=False, help_text="scale (default), categorical, "
                                   "multilabel or free_text")
    options = serializers.JSONField(required=False, help_text='categorical/multilabel: {"labels": [...]} '
                                    '(multilabel also "none_option"); free_text: {"min_length", "max_length"}')
    rationale = serializers.ChoiceField(choices=["", "optional", "required"], required=False, allow_blank=True,
                                        help_text="a free-text reason beside each answer")


class ProgressSerializer(serializers.Serializer):
    items = serializers.IntegerField()
    raters_per_item = serializers.IntegerField()
    done = serializers.IntegerField(help_text="item-ratings from submitted assignments, capped at the target per item")
    needed = serializers.IntegerField()
    percent = serializers.FloatField()
    assignments = serializers.DictField(child=serializers.IntegerField())
    ratings = serializers.IntegerField()
    mean_seconds = serializers.FloatField(allow_null=True)
    median_seconds = serializers.FloatField(allow_null=True)


class StudyOutputSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    title = serializers.CharField()
    experiment = serializers.SlugField(source="experiment.slug")
    design = serializers.ChoiceField(choices=Design.choices)
    unit = serializers.ChoiceField(choices=Unit.choices)
    design_config = DesignConfigField()
    unit_config = serializers.DictField(help_text="the unit's settings (a chat study's turns and limits)")
    criteria = CriterionSerializer(many=True, source="criteria.all")
    raters_per_item = serializers.IntegerField()
    items_per_assignment = serializers.IntegerField()
    instructions = serializers.CharField()
    status = serializers.ChoiceField(choices=Study.Status.choices)
    platform = serializers.ChoiceField(choices=Study.Platform.choices)
    created_at = serializers.DateTimeField()
    published_at = serializers.DateTimeField(allow_null=True)
    closed_at = serializers.DateTimeField(allow_null=True)
    paused = serializers.SerializerMethodField(help_text="published but taking no new raters (studies.authoring.editing)")
    paused_at = serializers.DateTimeField(allow_null=True)
    deadline = serializers.SerializerMethodField(help_text="platform_config.closes_at: no new raters after it")
    consent_text = serializers.CharField()
    language = serializers.CharField(help_text="the rater pages' language (settings.LANGUAGES)")
    language_from_browser = serializers.BooleanField(help_text="the rater's browser language where the pages have it")
    reward = serializers.DecimalField(max_digits=8, decimal_places=2, allow_null=True)
    estimated_minutes = serializers.IntegerField(allow_null=True)
    time_limit_minutes = serializers.SerializerMethodField(
        help_text="how long a started assignment holds its place (the study's limit, else the default)")
    questionnaire = serializers.JSONField()
    rater_key = serializers.CharField(help_text="the study's rater link key: raters enter at /r/c/<key>/ (the rater "
                                      "API: /api/rate/studies/<key>/sessions/)")

    def get_paused(self, study) -> bool:
        return study.paused_at is not None and study.status == Study.Status.PUBLISHED

    def get_deadline(self, study) -> datetime | None:
        return allocation.study_closes_at(study)

    def get_time_limit_minutes(self, study) -> int:
        return int(review.time_limit_minutes(study))  # the study's, or the default: a place is held this long


class ImportOutputSerializer(serializers.Serializer):
    corpus = serializers.SlugField()
    format = serializers.CharField()
    conversations = serializers.IntegerField()
    responses = serializers.IntegerField()
    systems_created = serializers.ListField(child=serializers.CharField())
    benchmark_study = serializers.SlugField(allow_null=True)
    ratings = serializers.IntegerField()
    missing_scores = serializers.DictField(child=serializers.IntegerField(), required=False,
                                           help_text="quality -> records where it had no score (a missing value)")
    unit = serializers.ChoiceField(choices=Unit.choices, required=False, help_text="what the imported judgments rate")
    format_name = serializers.CharField(required=False, help_text="the format read, in words (the one detected)")
    warnings = serializers.ListField(child=serializers.CharField(), required=False,
                                     help_text="what was guessed, by line (a turn whose speaker could not be read)")
    acute_study = serializers.SlugField(allow_null=True, required=False,
                                        help_text="a ParlAI pairings file's draft ACUTE-Eval study (its pairs)")


class ImportInputSerializer(StrictInput):
    file = serializers.FileField()
    format = serializers.ChoiceField(choices=("auto", *FORMATS), default="auto")
    corpus = serializers.SlugField(required=False, allow_blank=True)
    systems = serializers.ListField(child=serializers.SlugField(), required=False, default=list)
    run_in_background = serializers.BooleanField(default=False, help_text="queue a worker job (large files)")
    judged_speaker = serializers.CharField(required=False, allow_blank=True, max_length=100, default="",
                                           help_text="dialogues: the speaker to judge wherever a conversation has it "
                                                     "(else the file's: ParlAI's speakers_to_eval, a self-chat's first "
                                                     "speaker, a model chat's bot)")
    more_files = serializers.ListField(
        child=serializers.FileField(), required=False, default=list,
        help_text="further files of the same evaluation and format (e.g. the parts of DSTC9): one corpus and one "
                  "benchmark study; imported at once, not in the background")


class InviteOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    label = serializers.CharField()
    status = serializers.SerializerMethodField(help_text="open, claimed (a browser holds it), expired or revoked")
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    claimed_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)
    assignment = serializers.SerializerMethodField(help_text="the place its rater holds, if any")

    def get_status(self, invite) -> str:
        return invites.invite_status(invite)

    def get_assignment(self, invite) -> int | None:
        assignment = invites.invite_assignment(invite) if invite.claimed_at else None
        return assignment.pk if assignment else None

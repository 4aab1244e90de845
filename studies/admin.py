"""Django admin: plain CRUD. Reports are their own views."""
from django.contrib import admin

from studies import models


class CriterionInline(admin.TabularInline):
    model = models.Criterion
    extra = 0


class StudyInline(admin.TabularInline):
    model = models.Study
    extra = 0
    fields = ("slug", "title", "design", "status")
    show_change_link = True


@admin.register(models.Experiment)
class ExperimentAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "owner", "is_benchmark", "created_at")
    search_fields = ("slug", "title")
    filter_horizontal = ("collaborators",)
    inlines = [StudyInline]


@admin.register(models.Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "experiment", "design", "unit", "status", "raters_per_item", "items_per_assignment")
    list_filter = ("design", "unit", "status", "platform")
    search_fields = ("slug", "title")
    readonly_fields = ("published_at", "closed_at", "created_at")
    inlines = [CriterionInline]


@admin.register(models.Corpus)
class CorpusAdmin(admin.ModelAdmin):
    list_display = ("slug", "source_format", "source_name", "owner", "created_at")
    search_fields = ("slug", "source_name")


@admin.register(models.SystemDescription)
class SystemDescriptionAdmin(admin.ModelAdmin):
    list_display = ("system", "owner", "is_human", "description")


@admin.register(models.System)
class SystemAdmin(admin.ModelAdmin):
    list_display = ("name", "is_human", "description")
    search_fields = ("name",)


@admin.register(models.Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("external_id", "corpus")
    list_filter = ("corpus",)
    search_fields = ("external_id",)


@admin.register(models.Response)
class ResponseAdmin(admin.ModelAdmin):
    list_display = ("id", "system", "conversation", "position", "is_reference")
    list_filter = ("system", "is_reference")
    raw_id_fields = ("conversation",)


@admin.register(models.StudyItem)
class StudyItemAdmin(admin.ModelAdmin):
    list_display = ("study", "position", "conversation", "reference_value", "check_kind")
    list_filter = ("study", "check_kind")
    raw_id_fields = ("conversation", "reference_response", "reference_conversation")


@admin.register(models.Rater)
class RaterAdmin(admin.ModelAdmin):
    list_display = ("platform", "external_id", "blocked", "prior_rating_experience", "prior_agent_experience")
    list_filter = ("platform", "blocked")
    search_fields = ("external_id",)


@admin.register(models.RaterBlock)
class RaterBlockAdmin(admin.ModelAdmin):
    list_display = ("rater", "owner", "reason", "created_at", "lifted_at")
    search_fields = ("rater__external_id",)
    raw_id_fields = ("rater",)


@admin.register(models.RaterDecision)
class RaterDecisionAdmin(admin.ModelAdmin):
    list_display = ("assignment", "kind", "reason", "decided_by", "decided_at", "reverted_at")
    list_filter = ("kind",)
    raw_id_fields = ("assignment",)


@admin.register(models.Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("study", "rater", "acceptance_id", "status", "started_at", "submitted_at", "total_seconds",
                    "completion_code", "checks_passed", "checks_shown", "checks_failed")
    list_filter = ("status", "checks_failed", "study")
    search_fields = ("acceptance_id", "rater__external_id")
    raw_id_fields = ("rater",)


@admin.register(models.Invite)
class InviteAdmin(admin.ModelAdmin):
    """Invites are made from the study page, the API or ``invite_create``; here they can be looked up
    (and deleted to revoke one). The claiming browser's hash is never editable."""

    list_display = ("study", "label", "created_at", "expires_at", "claimed_at")
    list_filter = ("study",)
    search_fields = ("label",)
    readonly_fields = ("token", "browser_hash", "claimed_at", "created_by")


@admin.register(models.Rating)
class RatingAdmin(admin.ModelAdmin):
    list_display = ("assignment", "criterion", "response", "conversation", "value", "rank", "seconds")
    list_filter = ("criterion__study",)
    raw_id_fields = ("assignment", "item", "response", "conversation")


@admin.register(models.BestWorstChoice)
class BestWorstChoiceAdmin(admin.ModelAdmin):
    list_display = ("assignment", "item", "criterion", "best", "worst", "seconds")
    list_filter = ("criterion__study",)
    raw_id_fields = ("assignment", "item", "best", "worst")


@admin.register(models.ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ("source_name", "corpus_slug", "status", "owner", "created_at", "finished_at")
    list_filter = ("status",)

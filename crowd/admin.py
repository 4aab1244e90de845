"""Django admin: plain CRUD views of the crowd records (operations live on the study's Crowd page)."""
from django.contrib import admin

from crowd import models


class HitInline(admin.TabularInline):
    model = models.Hit
    extra = 0


@admin.register(models.Publication)
class PublicationAdmin(admin.ModelAdmin):
    list_display = ("study", "platform", "sandbox", "status", "external_id", "published_at", "synced_at")
    list_filter = ("platform", "sandbox", "status")
    inlines = [HitInline]


@admin.register(models.WorkerAssignment)
class WorkerAssignmentAdmin(admin.ModelAdmin):
    list_display = ("publication", "worker_id", "external_id", "state", "assignment", "synced_at")
    list_filter = ("state", "publication__platform")
    search_fields = ("worker_id", "external_id")


@admin.register(models.Bonus)
class BonusAdmin(admin.ModelAdmin):
    list_display = ("assignment", "amount", "status", "created_at", "sent_at")
    list_filter = ("status",)


@admin.register(models.WorkerBlock)
class WorkerBlockAdmin(admin.ModelAdmin):
    list_display = ("worker_id", "sandbox", "active", "reason", "created_at")


admin.site.register(models.QualificationType)

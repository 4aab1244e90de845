"""The study's ratings as a Label Studio task export (JSON) and its labeling configuration (XML), as downloads."""
from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404

from studies import access
from studies.reports.exporting import no_store
from studies.reports.label_studio_export import label_studio_config, label_studio_tasks


@login_required
def label_studio_tasks_download(request, slug):
    study = get_object_or_404(access.studies_visible_to(request.user), slug=slug)
    response = HttpResponse(json.dumps(label_studio_tasks(study), ensure_ascii=False, indent=1),
                            content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-label-studio.json"'
    return no_store(response)


@login_required
def label_studio_config_download(request, slug):
    study = get_object_or_404(access.studies_visible_to(request.user), slug=slug)
    response = HttpResponse(label_studio_config(study), content_type="application/xml")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-label-studio.xml"'
    return no_store(response)

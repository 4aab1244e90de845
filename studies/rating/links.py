"""The addresses raters are given. A study's link names it by its opaque ``rater_key``, never by its
slug: the slug carries the condition's title, and a rater of a between-subjects experiment must not learn
which condition they are in (issue 26). ``/r/<slug>/`` links handed out earlier keep working."""
from __future__ import annotations

from django.urls import reverse

from studies.models import Study


def study_entry_path(study: Study) -> str:
    """``/r/c/<rater_key>/``: the study's link for raters (platform parameters go after it)."""
    return reverse("raters:condition_entry", args=[study.rater_key])

"""The addresses raters are given. A study's link names it by its opaque ``rater_key``, never by its
slug: the slug carries the condition's title, and a rater of a between-subjects experiment must not learn
which condition they are in. ``/r/<slug>/`` links handed out earlier keep working. What a link
may open is decided here once, for the entry pages and the rater API alike."""
from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet
from django.urls import reverse

from studies.models import Experiment, Study
from studies.rating import allocation, closing


def study_entry_path(study: Study) -> str:
    """``/r/c/<rater_key>/``: the study's link for raters (platform parameters go after it)."""
    return reverse("raters:condition_entry", args=[study.rater_key])


def enterable_studies() -> QuerySet[Study]:
    """The studies a rater's link may open: published or closed (a closed one says so on its page), never a
    draft or a benchmark study. Anonymous visitors learn nothing from an address: an unknown one, a draft
    and a benchmark study all answer the same (the entry pages and the rater API)."""
    return Study.objects.filter(status__in=[Study.Status.PUBLISHED, Study.Status.CLOSED]) \
        .exclude(platform=Study.Platform.BENCHMARK)


@dataclass(frozen=True)
class ExperimentLink:
    """What an experiment's link (``/r/x/<slug>/``) opens: its conditions a rater may enter (``linked``), those
    still taking raters (``open_ones``), why the link cannot place anyone (``problem``: conditions on
    different platforms) and the platform whose parameters the link carries."""

    experiment: Experiment
    linked: list[Study]
    open_ones: list[Study]
    problem: str | None
    platform: str


def experiment_link_open(slug: str) -> ExperimentLink | None:
    """The experiment behind a link, its conditions closed first where they are due (past their closing time:
    ``closing.study_close_if_done``, as a study's own link does on access); None when no condition is there
    for raters. The entry page and the rater API's session both start here."""
    experiment = Experiment.objects.filter(slug=slug, is_benchmark=False).first()
    linked = list(enterable_studies().filter(experiment=experiment).order_by("pk")) if experiment else []
    if experiment is None or not linked:
        return None
    for study in linked:
        closing.study_close_if_done(study=study, check_items=False)
    open_ones = [s for s in linked if s.status == Study.Status.PUBLISHED]
    return ExperimentLink(experiment=experiment, linked=linked, open_ones=open_ones,
                          problem=allocation.experiment_platform_problem(open_ones),
                          platform=(open_ones or linked)[0].platform)

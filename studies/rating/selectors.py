"""Reads on the rater's path: whether a study has room (the criteria and response texts every item page
reads are cached in ``studies.designs.rater_reads``)."""
from __future__ import annotations

from studies.authoring.selectors import study_item_takes
from studies.models import Study


def study_has_room(study: Study) -> bool:
    """True while some item of the study is below its target number of raters."""
    takes = study_item_takes(study)
    return any(takes.get(pk, 0) < study.raters_per_item
               for pk in study.items.filter(check_kind="").values_list("pk", flat=True))

"""Reports read the ratings through a raw cursor (no per-value converters) and once per page: the frame is
value for value the one ``values_list`` gives, a ``one_read`` block shares each read between the page's
sections and nothing outlives it, and a new rating changes the report page that was cached before it."""
import pandas as pd
import pytest
from django.db.models import F

from studies.designs.common import DONE
from studies.models import AssignmentItem, Rating, Study
from studies.pseudonyms import rater_pseudonym
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.reads import one_read, queryset_frame
from studies.reports import selectors as report_selectors

pytestmark = pytest.mark.django_db


def _rate(study, rater_id: str, *, submit: bool = True):
    assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(
        platform="invite", external_id=rater_id))
    for slot in assignment.assignment_items.all():
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
            c: {r: (j + len(rater_id)) % 6 + 1 for j, r in enumerate(slot.response_order)}
            for c in ("readability", "coherence")})
    return answering.assignment_submit(assignment=assignment, total_seconds=200) if submit else assignment


@pytest.fixture
def rated(make_study):
    study = make_study("likert", raters_per_item=3, items_per_assignment=6)
    for rater_id in ("r1", "r22"):
        _rate(study, rater_id)
    return study


def test_cursor_frame_equals_values_list_frame_with_booleans_json_dates_and_nulls(rated):
    studies = Study.objects.filter(pk=rated.pk)
    columns = {**report_selectors.RATINGS_FRAME_COLUMNS, "updated": "updated_at", "nothing": "rank"}
    rows = report_selectors.normalised_ratings(studies).filter(assignment__status__in=DONE).values_list(*columns.values())
    expected = pd.DataFrame.from_records(list(rows), columns=list(columns))
    got = queryset_frame(rows, list(columns))
    assert len(got) == Rating.objects.filter(assignment__study=rated).count() > 0
    pd.testing.assert_frame_equal(got, expected)
    slots = AssignmentItem.objects.filter(assignment__study=rated).values_list("assignment_id", "response_order")
    pd.testing.assert_frame_equal(queryset_frame(slots, ["a", "order"]),
                                  pd.DataFrame.from_records(list(slots), columns=["a", "order"]))
    empty = Rating.objects.filter(pk__in=[]).values_list("id", "value")
    pd.testing.assert_frame_equal(queryset_frame(empty, ["id", "value"]),
                                  pd.DataFrame.from_records([], columns=["id", "value"]))


def test_cursor_frame_floats_are_left_to_the_callers_cast(rated):
    rows = Rating.objects.filter(assignment__study=rated).annotate(half=F("value") / 2.0).values_list("id", "half")
    got = queryset_frame(rows, ["id", "half"], floats={"half"})
    expected = pd.DataFrame.from_records(list(rows), columns=["id", "half"])
    assert got["half"].astype(float).tolist() == expected["half"].astype(float).tolist()


def test_one_read_shares_each_read_inside_and_nothing_outside(rated):
    studies = Study.objects.filter(pk=rated.pk)
    with one_read():
        first = report_selectors.ratings_frame(studies)
        assert report_selectors.ratings_frame(Study.objects.filter(pk=rated.pk)) is first
        assert report_selectors.ratings_frame(studies, raw_ids=True) is not first  # other arguments: another read
        version = report_selectors.ratings_version(studies)
        _rate(rated, "r333")
        assert report_selectors.ratings_version(studies) == version  # one read per block, by design
        assert report_selectors.ratings_frame(Study.objects.filter(pk__in=[])).empty  # no SQL to key it by
    assert report_selectors.ratings_frame(studies) is not first
    assert report_selectors.ratings_version(studies) != version
    assert len(report_selectors.ratings_frame(studies)) > len(first)


def test_a_new_rating_changes_the_cached_report_page(client, user, rated):
    client.force_login(user)
    url = f"/studies/{rated.slug}/report/"
    before = client.get(url)
    assert len(before.context["report"].raters) == 2
    assert len(client.get(url).context["report"].raters) == 2  # from the cache
    newcomer = _rate(rated, "r333").rater
    name = rater_pseudonym(rated.experiment_id, newcomer.pk)
    assert name not in before.content.decode()
    after = client.get(url)
    assert len(after.context["report"].raters) == 3
    assert name in after.content.decode()  # the page's body is cached as rendered: a new version renders it anew
    frame = report_selectors.ratings_frame(Study.objects.filter(pk=rated.pk))
    assert after.context["report"].tables["table1"][0]["n_raters"] == frame["rater"].nunique() == 3


def test_a_renamed_condition_or_question_is_named_anew_on_the_cached_report(client, user, rated):
    """Reports name the conditions and questions besides the ratings: a new title must not wait for a new rating."""
    client.force_login(user)
    url = f"/experiments/{rated.experiment.slug}/report/"
    first = client.get(url).context["report"]
    assert {c.get("title") for c in first.conditions} == {rated.title}
    Study.objects.filter(pk=rated.pk).update(title="Renamed condition")
    again = client.get(url).context["report"]
    assert {c.get("title") for c in again.conditions} == {"Renamed condition"}

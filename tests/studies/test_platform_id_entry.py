"""M1, entry side: platform ids are normalised (Unicode NFKC, then MTurk upper / Prolific lower case)
and format-checked before anything is stored; Prolific's SESSION_ID is bound to the assignment; a
rater screened out of a study or experiment never gets a fresh assignment back by respelling their id
or inventing a session."""
import pytest
from django.test import Client

from studies.authoring import services as authoring
from studies.models import Assignment, Rater
from studies.rating import entry as rater_entry
from studies.rating.platforms import IdentityError, identity_from

pytestmark = pytest.mark.django_db

PID = "5f3a0c9e1b2d4f6a8c0e1f2a"
FULL_WIDTH_PID = PID.replace("5", "\uff15").replace("3", "\uff13")  # full-width digits
SUBMIT = "https://www.mturk.com"


def prolific(pid=PID, session="6560aaaa0000000000000001", study="6550a1b2c3d4e5f601234567"):
    return {"PROLIFIC_PID": pid, "SESSION_ID": session, "STUDY_ID": study}


def test_prolific_ids_are_normalised_to_lower_case_nfkc():
    identity = identity_from(prolific(PID.upper(), "6560AAAA0000000000000001"), "prolific")
    assert identity.external_id == PID and identity.acceptance_id == "6560aaaa0000000000000001"
    assert identity_from(prolific(FULL_WIDTH_PID), "prolific").external_id == PID
    assert identity_from(prolific(), "prolific").platform_data["STUDY_ID"] == "6550a1b2c3d4e5f601234567"


@pytest.mark.parametrize(("params", "parameter"), [
    (prolific("5f3a0c9e1b2d4f6a8c0e1f2"), "PROLIFIC_PID"),            # 23 digits
    (prolific("5f3a0c9e1b2d4f6a8c0e1f2g"), "PROLIFIC_PID"),           # not hex
    (prolific("participant-7"), "PROLIFIC_PID"),
    (prolific(session="not a session"), "SESSION_ID"),
    (prolific(study="x" * 24), "STUDY_ID"),
])
def test_prolific_ids_must_be_24_hex_digits(params, parameter):
    with pytest.raises(IdentityError) as caught:
        identity_from(params, "prolific")
    assert caught.value.parameter == parameter and "24 hexadecimal digits" in str(caught.value)


def mturk(worker="A1B2C3D4E5F6G7", assignment="3AB4CD5EF6GH7IJ8KL9MN0OP1QR2ST", hit="3HIT4CD5EF6GH7IJ8KL9MN0OP1QR2S"):
    return {"workerId": worker, "assignmentId": assignment, "hitId": hit, "turkSubmitTo": SUBMIT}


def test_mturk_ids_are_normalised_to_upper_case_nfkc():
    identity = identity_from(mturk("a1b2c3d4e5f6g7", "3ab4cd5ef6gh7ij8kl9mn0op1qr2st", "\uff13hit4cd5ef6gh7ij8kl9mn0op1qr2s"),
                             "mturk")
    assert identity.external_id == "A1B2C3D4E5F6G7"
    assert identity.acceptance_id == identity.platform_data["assignmentId"] == "3AB4CD5EF6GH7IJ8KL9MN0OP1QR2ST"
    assert identity.platform_data["hitId"] == "3HIT4CD5EF6GH7IJ8KL9MN0OP1QR2S"
    assert identity_from(mturk(hit="3H\ufb01T"), "mturk").platform_data["hitId"] == "3HFIT"  # NFKC: the ligature is 'fi'


@pytest.mark.parametrize(("params", "parameter"), [
    (mturk(assignment="3AB\u00df4CD5EF6"), "assignmentId"),   # 'ß'.upper() == 'SS' once let it through
    (mturk(hit="3HIT\u00b54CD5"), "hitId"),                   # micro sign: NFKC gives Greek mu
    (mturk(worker="A1\u0130B2"), "workerId"),                 # dotted capital I
    (mturk(worker="A" * 65), "workerId"),
    (mturk(assignment="3AB-4CD"), "assignmentId"),
])
def test_mturk_ids_must_be_ascii_letters_and_digits_of_sane_length(params, parameter):
    with pytest.raises(IdentityError) as caught:
        identity_from(params, "mturk")
    assert caught.value.parameter == parameter


def test_a_bad_prolific_id_gets_a_polite_400_naming_the_parameter(client, make_study):
    study = make_study("likert", platform="prolific")
    response = client.get(f"/r/{study.slug}/?PROLIFIC_PID=P1&SESSION_ID=6560aaaa0000000000000001")
    assert response.status_code == 400
    assert "PROLIFIC_PID" in response.content.decode() and "24 hexadecimal digits" in response.content.decode()
    assert (Rater.objects.count(), Assignment.objects.count()) == (0, 0)


def _enter(client, url, params):
    return client.get(url, params)


def test_a_second_session_id_does_not_make_a_new_assignment(make_study):
    study = make_study("likert", platform="prolific")
    first = Client().get(f"/r/{study.slug}/", prolific())
    assert first.status_code == 302
    again = Client().get(f"/r/{study.slug}/", prolific(session="6560aaaa00000000000000ff"))
    assert again.status_code == 403 and Assignment.objects.count() == 1
    same = Client().get(f"/r/{study.slug}/", prolific(PID.upper(), "6560AAAA0000000000000001"))
    assert same["Location"] == first["Location"]  # the same session, however it is spelt


def _screen_out(assignment: Assignment) -> None:
    assignment.checks_failed = True
    assignment.status = Assignment.Status.SUBMITTED
    assignment.save(update_fields=["checks_failed", "status"])


@pytest.mark.parametrize("pid", [PID.upper(), FULL_WIDTH_PID, " " + PID + " "])
def test_a_screened_out_participant_cannot_come_back_as_new(make_study, pid):
    study = make_study("likert", platform="prolific")
    assert Client().get(f"/r/{study.slug}/", prolific()).status_code == 302
    _screen_out(Assignment.objects.get())
    response = Client().get(f"/r/{study.slug}/", prolific(pid, session="6560bbbb0000000000000002"))
    assert response.status_code == 403
    assert (Rater.objects.count(), Assignment.objects.count()) == (1, 1)


def test_a_screened_out_participant_gets_no_second_condition(user, make_study):
    experiment = authoring.experiment_create(owner=user, title="Two conditions")
    make_study("likert", platform="prolific", experiment=experiment)
    make_study("rme", platform="prolific", experiment=experiment)
    assert Client().get(f"/r/x/{experiment.slug}/", prolific()).status_code == 302
    _screen_out(Assignment.objects.get())
    for pid in (PID.upper(), FULL_WIDTH_PID):
        response = Client().get(f"/r/x/{experiment.slug}/", prolific(pid, session="6560cccc0000000000000003"))
        assert response.status_code == 403, response.content.decode()[:300]
    assert Assignment.objects.count() == 1
    # Through the other condition's own link as well.
    other = experiment.studies.exclude(pk=Assignment.objects.get().study_id).get()
    assert Client().get(f"/r/{other.slug}/", prolific(PID.upper(), "6560dddd0000000000000004")).status_code == 403
    assert Assignment.objects.count() == 1


def test_services_compare_platform_ids_normalised(make_study):
    """Entry paths that bypass the link (crowd simulation, tests) still meet the same rater."""
    study = make_study("likert", platform="prolific", raters_per_item=3)
    first = rater_entry.assignment_enter(study=study, platform="prolific", external_id=PID, acceptance_id="s1")
    again = rater_entry.assignment_enter(study=study, platform="prolific", external_id=FULL_WIDTH_PID.upper(),
                                         acceptance_id="S1")
    assert again.pk == first.pk and Rater.objects.count() == 1


def test_a_rater_stored_before_normalisation_is_still_found(make_study):
    study = make_study("likert", platform="prolific", raters_per_item=3)
    legacy = Rater.objects.create(platform="prolific", external_id=PID.upper())  # as once typed
    assignment = rater_entry.assignment_enter(study=study, platform="prolific", external_id=PID, acceptance_id="s1")
    assert assignment.rater_id == legacy.pk and Rater.objects.count() == 1

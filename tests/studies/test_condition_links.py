"""A rater of a between-subjects experiment cannot tell which condition they are in from any address they
are given or shown: study links name the study by its opaque ``rater_key``, never by its slug,
which carries the condition's title. Links handed out before still open."""
import io
import re

import pytest
from django.core.management import call_command
from django.test import Client

from crowd import scope
from studies.authoring import services as authoring
from studies.models import Assignment
from studies.rating import invites
from tests.factories import prolific_id

pytestmark = pytest.mark.django_db


@pytest.fixture
def conditions(user, corpus):
    experiment = authoring.experiment_create(owner=user, title="Persona")
    made = []
    for title, platform in (("Warm persona", "prolific"), ("Cold persona", "invite")):
        study = authoring.study_create(experiment=experiment, title=title, design="likert", raters_per_item=2,
                                       items_per_assignment=2, platform=platform)
        authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"], reference_system="human")
        authoring.study_publish(study=study)
        made.append(study)
    return made


def leaks(text, study):
    return [w for w in (study.slug, study.title, study.title.lower(), "warm", "cold") if w in text]


def test_every_link_a_researcher_hands_out_names_no_condition(client, api, user, conditions):
    warm, cold = conditions
    client.force_login(user)
    for study in conditions:
        page = client.get(f"/studies/{study.slug}/").content.decode()
        links = re.findall(r'<code data-testid="(?:mturk|prolific|invite)-link">([^<]*)</code>', page)
        links += re.findall(r"<code>(http[^<]*/r/[^<]*)</code>", page)
        assert links and all(f"/r/c/{study.rater_key}/" in link or "/r/x/" in link for link in links), links
        assert not [link for link in links if leaks(link, study)]
        assert not leaks(scope.entry_url(study, query="workerId=W"), study)  # what a HIT's ExternalURL opens
    made = api.post(f"/api/studies/{cold.slug}/invites/", {}, format="json")
    assert made.status_code in (200, 201), made.content
    assert not leaks(str(made.json()), cold) and f"/r/c/{cold.rater_key}/" in str(made.json())
    out = io.StringIO()
    call_command("invite_create", cold.slug, stdout=out)
    assert f"/r/c/{cold.rater_key}/?invite=" in out.getvalue() and not leaks(out.getvalue(), cold)


def test_a_rater_entering_by_the_key_sees_no_condition_and_old_links_still_open(conditions):
    warm, cold = conditions
    client = Client()
    entered = client.get(f"/r/c/{warm.rater_key}/", {"PROLIFIC_PID": prolific_id("p1"), "SESSION_ID": prolific_id("s1")})
    assert entered.status_code == 302 and not leaks(entered["Location"], warm)
    start = client.get(entered["Location"])
    assert not leaks(start.content.decode(), warm)
    assignment = Assignment.objects.get(rater__external_id=prolific_id("p1"))
    assert assignment.study == warm
    old = Client().get(f"/r/{cold.slug}/", {"invite": invites.invite_create(study=cold).token})
    assert old.status_code == 302  # a link handed out before the key still opens
    assert Client().get("/r/c/not-a-key/").status_code == 404
    assert warm.rater_key != cold.rater_key and len(warm.rater_key) >= 12

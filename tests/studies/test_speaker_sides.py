"""Speaker bubbles swapped sides between the conversations of a best-worst
tuple (a {% cycle %} ran on across the members, and sides followed whoever opened). A speaker's side is
now fixed by who they are, not by who talks first: beside a judged response, its speaker (the one who
replies to the context's last turn) on side-a and the other on side-b; in a whole dialogue, the system
("model", "system", "bot", ...) on side-a. Checked on conversations opened by different speakers."""
import re

import pytest
from django.test import Client

from studies.designs.units.dialogue import speaker_turns
from studies.designs.units.sides import context_sides
from studies.models import Conversation, Response, StudyItemResponse
from studies.rating import invites

pytestmark = pytest.mark.django_db

USER_OPENS = [{"speaker": "user", "text": "u1 hello"}, {"speaker": "system", "text": "s1 hi"},
              {"speaker": "user", "text": "u2 how are you"}]
SYSTEM_OPENS = [{"speaker": "system", "text": "s1 welcome"}, {"speaker": "user", "text": "u1 thanks"}]


def _sides(page: str) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {}
    for side, speaker in re.findall(r'<li class="turn (side-[ab])[^"]*"><span class="speaker">([^<]*)</span>', page):
        seen.setdefault(speaker, set()).add(side)
    return seen


def _rater_page(study) -> str:
    client = Client()
    location = client.get(f"/r/{study.slug}/?invite={invites.invite_create(study=study).token}")["Location"]
    token = location.split("/")[3]
    form = re.search(r'name="form_token" value="([0-9a-f]+)"', client.get(f"/r/a/{token}/").content.decode()).group(1)
    client.post(f"/r/a/{token}/", {"agree": "yes", "form_token": form})
    return client.get(f"/r/a/{token}/items/0/").content.decode()


def test_a_tuples_members_keep_each_speaker_on_one_side_whoever_opens(make_study):
    study = make_study("bws_tuples", raters_per_item=1, items_per_assignment=1)
    member_ids = StudyItemResponse.objects.filter(item__study=study).values_list("response_id", flat=True)
    conversations = sorted(set(Response.objects.filter(pk__in=member_ids).values_list("conversation_id", flat=True)))
    assert len(conversations) >= 2
    for i, pk in enumerate(conversations):  # alternate who opens, so a cycle or "first speaker" rule must fail
        Conversation.objects.filter(pk=pk).update(turns=USER_OPENS if i % 2 == 0 else SYSTEM_OPENS)
    page = _rater_page(study)
    assert _sides(page) == {"system": {"side-a"}, "user": {"side-b"}}


def test_a_response_items_context_puts_the_responder_on_side_a(make_study):
    study = make_study("likert", raters_per_item=1, items_per_assignment=1)
    # the user opens and speaks last: the response judged is the system's, so the system is on side-a
    Conversation.objects.filter(pk__in=study.items.values("conversation_id")).update(turns=USER_OPENS)
    assert _sides(_rater_page(study)) == {"system": {"side-a"}, "user": {"side-b"}}


def test_the_rules_on_their_own():
    # beside a response: the last context speaker is the one replied to (side-b), whoever opened
    assert [t["side"] for t in context_sides(USER_OPENS)] == ["side-b", "side-a", "side-b"]
    assert [t["side"] for t in context_sides(SYSTEM_OPENS)] == ["side-a", "side-b"]
    # a whole dialogue: the system's speaker on side-a, whoever opened; unknown names: by name, not order
    for turns in (USER_OPENS, SYSTEM_OPENS):
        assert {t["speaker"]: t["side"] for t in speaker_turns(turns)} == {"system": "side-a", "user": "side-b"}
    a_first = [{"speaker": "A", "text": "x"}, {"speaker": "B", "text": "y"}]
    assert {t["speaker"]: t["side"] for t in speaker_turns(a_first)} == \
           {t["speaker"]: t["side"] for t in speaker_turns(a_first[::-1])} == {"A": "side-a", "B": "side-b"}

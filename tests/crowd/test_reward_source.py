"""One source of truth for the reward: Study.reward (studies.authoring.planning). Crowd publications default to
it, setting a reward on a draft publication writes the study, and the data migration moves rewards
that draft publications held before."""
import importlib
from decimal import Decimal

import pytest
from django.apps import apps

from crowd import publishing
from crowd.models import Publication
from studies.authoring import editing

pytestmark = pytest.mark.django_db
migration = importlib.import_module("crowd.migrations.0002_reward_to_study")


def test_publications_default_to_the_studys_reward_and_minutes(make_study):
    study = make_study("likert", platform="prolific")
    study, _ = editing.study_update(study=study, values={"reward": "1.25", "estimated_minutes": 7})
    prolific = publishing.publication_configure(study=study, platform="prolific")
    assert (publishing.effective_settings(prolific)["reward_cents"], publishing.effective_settings(prolific)["estimated_minutes"]) == (125, 7)
    mturk = publishing.publication_configure(study=study, platform="mturk", sandbox=True)
    assert publishing.effective_settings(mturk)["reward"] == "1.25"


def test_a_reward_set_on_a_publication_is_the_studys(make_study):
    study = make_study("likert", platform="prolific")
    publication = publishing.publication_configure(study=study, platform="prolific", settings={"reward_cents": 240})
    study.refresh_from_db()
    assert study.reward == Decimal("2.40") and "reward_cents" not in publication.settings
    assert publishing.effective_settings(publication)["reward_cents"] == 240


def test_the_migration_moves_draft_rewards_and_leaves_sent_ones(make_study):
    draft_study, sent_study = make_study("likert"), make_study("bws")
    draft = Publication.objects.create(study=draft_study, platform="mturk", sandbox=True, settings={"reward": "0.90", "hits": 2})
    sent = Publication.objects.create(study=sent_study, platform="prolific", sandbox=False, status="published",
                                      settings={"reward_cents": 300})
    migration.forwards(apps, None)
    draft.refresh_from_db()
    sent.refresh_from_db()
    draft_study.refresh_from_db()
    sent_study.refresh_from_db()
    assert (draft_study.reward, draft.settings) == (Decimal("0.90"), {"hits": 2})
    assert (sent_study.reward, sent.settings) == (Decimal("3.00"), {"reward_cents": 300})
    migration.backwards(apps, None)
    draft.refresh_from_db()
    assert draft.settings == {"hits": 2, "reward": "0.90"}

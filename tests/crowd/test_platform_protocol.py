"""One platform protocol: every registered platform implements it, the Crowd
page shows each platform's controls from what its object declares, and outside crowd/platforms/ (and
the clients, models and migrations) no code of the crowd app decides anything by comparing a
platform to MTurk or Prolific. Read from the code's own syntax tree, no Django needed for that part."""
import ast
import inspect
from pathlib import Path

import pytest

from crowd import publishing
from crowd.models import Platform
from crowd.platforms import PLATFORMS, platform_of
from crowd.platforms.base import CrowdPlatform
from tests.problems import problem_fields

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = ("crowd/platforms/", "crowd/clients/", "crowd/migrations/", "crowd/models.py")
NAMES = {"mturk", "prolific"}


def _names_a_platform(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.lower() in NAMES
    return isinstance(node, ast.Attribute) and node.attr.lower() in NAMES and \
        isinstance(node.value, ast.Name) and node.value.id == "Platform"


def platform_decisions() -> list[str]:
    found = []
    for path in sorted((ROOT / "crowd").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(ALLOWED):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(_names_a_platform(n) for n in [node.left, *node.comparators]
                                                     + [e for c in node.comparators if isinstance(c, ast.Tuple | ast.Set | ast.List) for e in c.elts]):
                found.append(f"{relative}:{node.lineno}")
    for path in sorted((ROOT / "templates" / "crowd").rglob("*.html")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if any(f'== "{name}"' in line or f"== '{name}'" in line for name in NAMES):
                found.append(f"{path.relative_to(ROOT).as_posix()}:{number}")
    return found


def test_no_crowd_code_outside_the_platform_modules_decides_by_platform_name():
    assert platform_decisions() == []


def test_the_check_finds_a_decision_when_there_is_one():
    planted = ROOT / "crowd" / "_planted_for_test.py"
    planted.write_text('def f(p):\n    return p.platform == "prolific"\n')
    try:
        assert platform_decisions() == ["crowd/_planted_for_test.py:2"]
    finally:
        planted.unlink()


def test_every_platform_is_registered_and_implements_the_protocol():
    assert set(PLATFORMS) == set(Platform.values)
    for key, platform in PLATFORMS.items():
        assert isinstance(platform, CrowdPlatform) and platform.key == key
        assert not inspect.isabstract(type(platform))
        assert {name for name, _ in platform.setting_fields} <= platform.setting_keys
        assert platform.reward_setting in platform.setting_keys


@pytest.mark.django_db
def test_the_crowd_page_shows_each_platforms_own_controls(client, user, make_study):
    study = make_study("likert", platform="prolific")
    for key, sandbox in (("mturk", True), ("prolific", False)):
        publishing.publication_configure(study=study, platform=key, sandbox=sandbox)
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/crowd/").content.decode()
    mturk_panel, prolific_panel = page.split('data-testid="publication"')[1:3]
    assert "Check the balance" in mturk_panel and "create the draft only" not in mturk_panel
    assert "create the draft only" in prolific_panel and "Check the balance" not in prolific_panel
    assert "Completion code" in prolific_panel and "Assignments per HIT" in mturk_panel


def test_an_unknown_platform_is_refused_naming_the_known_ones():
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as refused:
        platform_of("crowdflower")
    assert refused.value.message_dict == {"platform": ["one of mturk, prolific"]}


@pytest.mark.django_db
def test_a_prolific_transition_is_refused_for_an_mturk_publication_on_the_page_and_the_api(client, user, make_study):
    from rest_framework.test import APIClient

    study = make_study("likert", platform="mturk")
    publication = publishing.publication_configure(study=study, platform="mturk", sandbox=True)
    client.force_login(user)
    page = client.post(f"/studies/{study.slug}/crowd/transition/", {"publication": publication.pk, "transition": "STOP"},
                       follow=True).content.decode()
    assert "publications have no transitions" in page  # no call was made (none could be: calls are off here)
    api = APIClient()
    api.force_authenticate(user)
    answer = api.post(f"/api/crowd/publications/{publication.pk}/transition/", {"action": "STOP"}, format="json")
    assert answer.status_code == 400 and "no transitions" in problem_fields(answer)["action"][0]


@pytest.mark.django_db
def test_expiring_hits_is_refused_for_a_prolific_publication(user, make_study):
    from rest_framework.test import APIClient

    from crowd.models import Publication

    study = make_study("likert", platform="prolific")
    publication = publishing.publication_configure(study=study, platform="prolific")
    Publication.objects.filter(pk=publication.pk).update(status="published", external_id="6550a1b2c3d4e5f601234567")
    api = APIClient()
    api.force_authenticate(user)
    answer = api.post(f"/api/crowd/publications/{publication.pk}/expire/", {}, format="json")
    assert answer.status_code == 400 and "no HITs" in problem_fields(answer)["publication"][0]
    assert Publication.objects.get().status == "published"  # not marked stopped behind Prolific's back

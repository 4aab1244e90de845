"""Walkthrough, Reports: once flagged raters are excluded, the table headings say so ("Table 1: all
raters" stayed as the heading)."""
import re

import pytest

from studies.analysis.report import table_title
from tests.studies.test_report import demo  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db


def headings(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<h2[^>]*>(.*?)</h2>", html, re.S)]


def test_table_headings_say_when_flagged_raters_are_excluded(client, user, demo):  # noqa: F811
    client.force_login(user)
    url = f"/experiments/{demo.slug}/report/"
    everyone = " ".join(headings(client.get(url).content.decode()))
    without = " ".join(headings(client.get(url + "?exclude_flagged=1").content.decode()))
    assert "Table 1: all raters —" in everyone
    assert "Table 1: all raters —" not in without and table_title("table1", excluding_flagged=True) in without


def test_table_titles():
    assert table_title("table1") == "Table 1: all raters"
    assert table_title("table1", excluding_flagged=True) == "Table 1: all raters except those flagged"
    assert table_title("table4", excluding_flagged=True).endswith("(flagged raters excluded)")

"""Researcher pages: login, the experiment list with the demo's four studies, forms that explain and
report problems, upload, publish, export."""
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from studies.authoring.demo import DEMO_EXPERIMENT, DEMO_PASSWORD, DEMO_USER, demo_load
from studies.models import Corpus, Rating, Study
from tests.conftest import small_corpus_lines

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(client, user):
    client.force_login(user)
    return client


def test_pages_need_a_login(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_demo_login_lists_the_four_demo_studies_with_progress(client):
    demo_load()
    assert client.login(username=DEMO_USER, password=DEMO_PASSWORD)
    response = client.get("/")
    assert response.status_code == 200
    page = response.content.decode()
    for design in ("likert", "rme", "bme", "bws"):
        assert f"/studies/demo-{design}/" in page
    assert page.count('value="100.0"') == 4  # every demo condition has all its ratings
    assert Study.objects.filter(experiment__slug=DEMO_EXPERIMENT).count() == 4


def test_demo_load_is_idempotent_and_complete():
    demo_load()
    counts = Rating.objects.count()
    assert demo_load() is None
    assert Rating.objects.count() == counts
    by_design = {d: Rating.objects.filter(assignment__study__design=d).count() for d in ("likert", "rme", "bme", "bws")}
    # 5 raters x 12 items x 2 criteria x responses shown (4 with the reference, 3 when it is the anchor)
    assert by_design == {"likert": 480, "rme": 360, "bme": 360, "bws": 480}


def test_study_form_explains_designs_and_keeps_input_on_error(researcher, user):
    from studies.authoring import services

    experiment = services.experiment_create(owner=user, title="E", slug="e")
    page = researcher.get("/experiments/e/studies/new/").content.decode()
    assert "Best-worst scaling" in page and "anchor" in page
    response = researcher.post("/experiments/e/studies/new/", {
        "title": "My Likert", "design": "likert", "criteria": "fluency, fluency", "raters_per_item": 10,
        "items_per_assignment": 5, "likert_points": 5, "platform": "invite"})
    assert response.status_code == 200
    assert "each criterion once: fluency is given twice" in response.content.decode()
    assert 'value="My Likert"' in response.content.decode()
    assert experiment.studies.count() == 0
    response = researcher.post("/experiments/e/studies/new/", {
        "title": "My Likert", "design": "likert", "criteria": "fluency", "raters_per_item": 10,
        "items_per_assignment": 5, "likert_points": 5, "platform": "invite"})
    study = experiment.studies.get()
    assert response.status_code == 302 and (study.design_config["points"], study.raters_per_item) == (5, 10)


def test_upload_page_lists_problems_and_imports_nothing(researcher):
    bad = small_corpus_lines(1) + b"not json\n"
    response = researcher.post("/import/", {"file": SimpleUploadedFile("bad.jsonl", bad), "format": "auto"})
    page = response.content.decode()
    assert "Nothing was imported" in page and "line 3: malformed JSON" in page
    assert Corpus.objects.count() == 0
    response = researcher.post("/import/", {"file": SimpleUploadedFile("good.jsonl", small_corpus_lines(2)), "format": "auto"})
    assert response.status_code == 302 and Corpus.objects.get().slug == "good"


def test_upload_page_stops_an_oversized_file_and_still_checks_csrf(researcher, user, settings):
    from django.test import Client

    settings.IMPORT_MAX_BYTES = 50_000
    response = researcher.post("/import/", {"file": SimpleUploadedFile("big.jsonl", small_corpus_lines(1000)),
                                            "format": "auto"})
    assert response.status_code == 200 and "larger than the import limit" in response.content.decode()
    assert Corpus.objects.count() == 0
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    response = strict.post("/import/", {"file": SimpleUploadedFile("good.jsonl", small_corpus_lines(2))})
    assert response.status_code == 403 and Corpus.objects.count() == 0


def test_build_publish_and_export_from_the_study_page(researcher, user, corpus):
    from studies.authoring import services

    experiment = services.experiment_create(owner=user, title="E", conditions=[{"title": "S", "design": "bws", "slug": "s"}])
    assert experiment.studies.get().status == "draft"
    response = researcher.post("/studies/s/", {"corpus": corpus.slug, "systems": "seq2seq, hred, thred",
                                               "reference_system": "human"})
    assert response.status_code == 302
    researcher.post("/studies/s/publish/")
    assert Study.objects.get(slug="s").status == "published"
    download = researcher.get("/studies/s/export.csv")
    assert download.status_code == 200
    assert b"".join(download.streaming_content).decode().startswith("experiment,study,design,criterion")


def test_someone_elses_study_page_is_a_404(client, other_user):
    from studies.authoring import services

    services.experiment_create(owner=other_user, title="X", conditions=[{"title": "S", "design": "bws", "slug": "hidden"}])
    from tests.factories import UserFactory

    client.force_login(UserFactory(username="carol"))
    assert client.get("/studies/hidden/").status_code == 404
    assert client.post("/studies/hidden/publish/").status_code == 404

"""Human labels against a metric (metrics.scoring.selectors.label_metric_cells): for every label of a categorical
or multi-label criterion, the point-biserial correlation against SciPy and the AUC against scikit-learn
on the same (rating, metric score) pairs, and the human-vs-metric page's section."""
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from metrics.models import MetricScore
from metrics.scoring import selectors, services
from studies.authoring.demo import DEMO_CORPUS, DEMO_FILE, demo_user
from studies.authoring.kinds_demo import CRITERIA, KINDS_EXPERIMENT, kinds_demo_load
from studies.corpora import services as corpus_imports
from studies.models import Rating, Study

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled():
    owner = demo_user()
    with DEMO_FILE.open("rb") as stream:
        corpus = corpus_imports.dialogues_import(stream=stream, source_name=DEMO_FILE.name, corpus_slug=DEMO_CORPUS,
                                                 owner=owner).corpus
    experiment = kinds_demo_load(owner=owner, corpus=corpus)
    readability = services.metric_model_default(key="readability")
    study = experiment.studies.get()
    services.scoring_run_execute(run=services.scoring_run_create(metric_model=readability, study=study, enqueue=False))
    return study, readability


def test_categorical_and_multilabel_labels_against_a_metric_equal_scipy_and_sklearn(labelled):
    study, readability = labelled
    cells = selectors.label_metric_cells(Study.objects.filter(pk=study.pk), readability)
    labels = {c["name"]: c["options"]["labels"] for c in CRITERIA if "options" in c}
    assert [(c["criterion"], c["label"]) for c in cells] == [(n, x) for n in ("safety", "problems") for x in labels[n]]
    scores = dict(MetricScore.objects.filter(metric_model=readability).values_list("response_id", "value"))
    for cell in cells:
        ratings = Rating.objects.filter(assignment__study=study, criterion__name=cell["criterion"],
                                        item__check_kind="").order_by("id")
        given = [(r.label == cell["label"]) if cell["kind"] == "categorical" else (cell["label"] in r.labels)
                 for r in ratings]
        metric = [scores[r.response_id] for r in ratings]
        assert (cell["n"], cell["positives"]) == (len(given), sum(given))
        if 0 < sum(given) < len(given):
            r, p = stats.pointbiserialr(given, metric)
            assert cell["r_pb"] == pytest.approx(r, abs=1e-9) and cell["p"] == pytest.approx(p, abs=1e-9)
            assert cell["auc"] == pytest.approx(roc_auc_score(given, metric), abs=1e-9)


def test_categorical_labels_section_on_the_human_metric_page(client, labelled):
    study, readability = labelled
    client.force_login(demo_user())
    page = client.get(f"/experiments/{KINDS_EXPERIMENT}/metrics/{readability.name}/")
    html = page.content.decode()
    assert page.status_code == 200 and 'data-testid="label-metric"' in html
    assert "unsafe" in html and "AUC" in html
    report = selectors.human_metric_report(Study.objects.filter(pk=study.pk), readability, bootstrap=50)
    assert {c["criterion"] for c in report["cells"]} == {"readability"}  # labels never enter the correlations


def test_categorical_label_rows_in_the_human_metric_csv(client, labelled):
    import csv
    import io

    study, readability = labelled
    client.force_login(demo_user())
    text = client.get(f"/experiments/{KINDS_EXPERIMENT}/metrics/{readability.name}.csv").content.decode()
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r["level"].startswith("label: ")]
    cells = selectors.label_metric_cells(Study.objects.filter(pk=study.pk), readability)
    assert len(rows) == 2 * len(cells)
    unsafe = next(c for c in cells if c["criterion"] == "safety" and c["label"] == "unsafe")
    auc = next(r for r in rows if r["criterion"] == "safety" and r["level"] == "label: unsafe" and r["method"] == "auc")
    assert float(auc["r"]) == pytest.approx(unsafe["auc"], abs=1e-12) and int(auc["n"]) == unsafe["n"]

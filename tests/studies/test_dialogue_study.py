"""A dialogue-unit study end to end through the API and the services: created with unit=dialogue on a
FED dialogue-level corpus, items are conversations, raters rate whole dialogues (a double submit stores
once), the report's ICC equals pingouin on the exported ratings, the export and the human-vs-metric
report key by conversation."""

import csv
import io
import json

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from scipy import stats

from metrics.models import Metric, MetricModel, MetricScore
from metrics.scoring.selectors import compute_human_metric_report
from studies.analysis.icc import icc
from studies.authoring import services as authoring
from studies.corpora import services as corpus_imports
from studies.models import AssignmentItem, Conversation, Rating, Study
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from tests.studies.test_import_dialogue import dump, fed_dialogue

pytestmark = pytest.mark.django_db

N_DIALOGUES, N_RATERS = 8, 4


def latent(conversation_id: int, criterion: str) -> float:
    return 1 + (conversation_id * 7 + (3 if criterion == "coherence" else 0)) % 5


@pytest.fixture
def fed_corpus(api):
    records = [fed_dialogue(i, model=["Meena", "Mitsuku"][i % 2]) for i in range(N_DIALOGUES)]
    response = api.post(
        "/api/imports/", {"file": SimpleUploadedFile("fed_dial.json", dump(records))}, format="multipart"
    )
    assert response.status_code == 201, response.content[:300]
    body = response.json()
    assert body["unit"] == "dialogue" and body["responses"] == 0 and body["conversations"] == N_DIALOGUES
    return body["corpus"]


@pytest.fixture
def dialogue_study(api, user, fed_corpus):
    experiment = authoring.experiment_create(owner=user, title="Dialogue judging")
    created = api.post(
        "/api/studies/create/",
        {
            "experiment": experiment.slug,
            "title": "Whole dialogues",
            "design": "likert",
            "unit": "dialogue",
            "design_config": {"points": 5},
            "raters_per_item": N_RATERS,
            "items_per_assignment": N_DIALOGUES,
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    assert created.json()["unit"] == "dialogue"
    assert created.json()["criteria"][1]["question"] == "How coherent is this dialogue as a whole?"
    slug = created.json()["slug"]
    built = api.post(f"/api/studies/{slug}/items/build/", {"corpus": fed_corpus}, format="json")
    assert built.json() == {"items": N_DIALOGUES}
    assert api.post(f"/api/studies/{slug}/publish/").status_code == 200
    return Study.objects.get(slug=slug)


def rate_everything(study: Study) -> None:
    rng = np.random.default_rng(7)  # a rater bias plus noise: a realistic, non-degenerate ICC
    for r in range(N_RATERS):
        bias = (r % 3) - 1
        rater = rater_entry.rater_get_or_create(platform="invite", external_id=f"rater-{r}")
        assignment = rater_entry.assignment_start(study=study, rater=rater, seed=r)
        for slot in AssignmentItem.objects.filter(assignment=assignment).select_related("item"):
            assert slot.response_order == [slot.item.conversation_id]  # the dialogue itself is the target
            cid = slot.item.conversation_id
            answers = {
                c: {cid: int(min(5, max(1, round(latent(cid, c) + bias + rng.normal(0, 0.9)))))}
                for c in ("readability", "coherence")
            }
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)  # double submit
        answering.assignment_submit(assignment=assignment)


def exported(api, slug) -> pd.DataFrame:
    response = api.get(f"/api/studies/{slug}/ratings/?format=csv")
    text = b"".join(response.streaming_content).decode()
    return pd.read_csv(io.StringIO(text))


def test_dialogue_study_items_ratings_report_and_export(api, dialogue_study):
    study = dialogue_study
    assert set(study.items.values_list("conversation_id", flat=True)) == set(
        Conversation.objects.filter(corpus__slug="fed_dial").values_list("id", flat=True)
    )
    rate_everything(study)
    ratings = Rating.objects.filter(assignment__study=study)
    assert ratings.count() == N_DIALOGUES * N_RATERS * 2  # the double submits stored once
    assert not ratings.filter(response__isnull=False).exists()
    rows = exported(api, study.slug)
    assert len(rows) == N_DIALOGUES * N_RATERS * 2
    assert rows["response"].isna().all() and set(rows["system"]) == {"Meena", "Mitsuku"}
    report = api.get(f"/api/studies/{study.slug}/report/").json()
    cells = {c["criterion"]: c for c in report["tables"]["table1"]}
    for criterion in ("readability", "coherence"):
        part = rows[rows["criterion"] == criterion]
        theirs = pg.intraclass_corr(part, "conversation", "rater", "normalised_value").set_index("Type")
        cell = cells[criterion]
        assert (cell["n_items"], cell["n_raters"]) == (N_DIALOGUES, N_RATERS)
        ours = icc(part["conversation"], part["rater"], part["normalised_value"])
        for form in ("ICC(C,k)", "ICC(A,k)", "ICC(C,1)", "ICC(A,1)"):
            assert cell["icc"][form]["value"] == pytest.approx(theirs.loc[form, "ICC"], abs=1e-9)
            assert cell["icc"][form]["value"] == pytest.approx(ours[form].value, abs=1e-12)
            assert cell["icc"][form]["ci95"] == pytest.approx(list(ours[form].ci95), abs=1e-12)
            assert cell["icc"][form]["ci95"] == pytest.approx(list(theirs.loc[form, "CI95"]), abs=0.005)  # 2 decimals


def test_human_vs_metric_joins_dialogue_scores_to_dialogue_ratings(api, client, user, dialogue_study):
    rate_everything(dialogue_study)
    metric = Metric.objects.create(key="self-eval-test", name="SelF-Eval (test)", level="dialogue", kind="learned")
    model = MetricModel.objects.create(metric=metric, name="self-eval-test")
    conversations = list(dialogue_study.items.values_list("conversation_id", flat=True))
    values = {cid: float(np.sin(cid) + latent(cid, "coherence") / 3) for cid in conversations}
    MetricScore.objects.bulk_create(
        [MetricScore(metric_model=model, conversation_id=c, value=v) for c, v in values.items()]
    )
    report = compute_human_metric_report(Study.objects.filter(pk=dialogue_study.pk), model, bootstrap=0)
    cells = {c["criterion"]: c for c in report["cells"]}
    means = Rating.objects.filter(assignment__study=dialogue_study).values_list(
        "criterion__name", "conversation_id", "value"
    )
    frame = pd.DataFrame(list(means), columns=["criterion", "conversation", "value"])
    for criterion in ("readability", "coherence"):
        human = frame[frame["criterion"] == criterion].groupby("conversation")["value"].mean()
        metric_values = [values[c] for c in human.index]
        cell = cells[criterion]
        assert cell["unit"] == "dialogue" and cell["n_responses"] == N_DIALOGUES and cell["missing_scores"] == 0
        for method, function in (
            ("pearson", stats.pearsonr),
            ("spearman", stats.spearmanr),
            ("kendall", stats.kendalltau),
        ):
            expected = function(metric_values, human.to_numpy())
            got = cell["response_level"][method]
            assert got["r"] == pytest.approx(expected.statistic, abs=1e-9)
            # 8 dialogues: the exact permutation p over all orderings, not the asymptotic one
            humans = human.to_numpy()
            exact = stats.permutation_test((np.asarray(metric_values),),
                                           lambda a, f=function, h=humans: f(a, h).statistic,
                                           permutation_type="pairings", n_resamples=np.inf).pvalue
            assert got["p"] == pytest.approx(exact, abs=1e-9) and got["p_method"] == "exact permutation"
    # the page (and its CSV) include the dialogue study once every rated dialogue has a score
    client.force_login(user)
    page = client.get(f"/experiments/{dialogue_study.experiment.slug}/metrics/{model.name}/")
    assert page.status_code == 200 and dialogue_study.slug.encode() in page.content
    assert b"<td>dialogue</td>" in page.content
    table = list(
        csv.DictReader(
            io.StringIO(
                client.get(f"/experiments/{dialogue_study.experiment.slug}/metrics/{model.name}.csv").content.decode()
            )
        )
    )
    assert {r["criterion"] for r in table} == {"readability", "coherence"}
    MetricScore.objects.filter(conversation_id=conversations[0]).delete()  # one dialogue unscored: listed, left out
    table = client.get(f"/experiments/{dialogue_study.experiment.slug}/metrics/{model.name}.csv").content.decode()
    assert "readability" not in table


def test_dialogue_units_refuse_bme_and_rme_needs_an_anchor(api, user, fed_corpus):
    experiment = authoring.experiment_create(owner=user, title="Refusals")
    with pytest.raises(ValidationError) as refused:
        authoring.study_create(experiment=experiment, title="x", design="bme", unit="dialogue")
    assert "BME is not offered for dialogue units" in str(refused.value.message_dict["unit"])
    rme = authoring.study_create(experiment=experiment, title="rme", design="rme", unit="dialogue")
    corpus = Conversation.objects.filter(corpus__slug=fed_corpus).first().corpus
    with pytest.raises(ValidationError) as no_anchor:
        authoring.study_items_build(study=rme, corpus=corpus)
    assert "anchor dialogue" in str(no_anchor.value)
    count = authoring.study_items_build(study=rme, corpus=corpus, reference_system="Meena")
    anchor = Conversation.objects.filter(corpus=corpus, metadata__system="Meena").order_by("id").first()
    assert count == N_DIALOGUES - 1 and not rme.items.filter(conversation=anchor).exists()
    assert set(rme.items.values_list("reference_conversation", "reference_value")) == {(anchor.pk, 100)}
    authoring.study_publish(study=rme)
    items = api.get(f"/api/studies/{rme.slug}/items/").json()["results"]
    assert {i["reference_conversation"] for i in items} == {anchor.external_id}
    assert all(i["responses"] == [] for i in items)


def test_rme_dialogue_ratings_are_normalised_against_the_anchor(user, fed_corpus):
    experiment = authoring.experiment_create(owner=user, title="RME dialogues")
    study = authoring.study_create(
        experiment=experiment, title="rme", design="rme", unit="dialogue", raters_per_item=1, items_per_assignment=3
    )
    corpus = Conversation.objects.filter(corpus__slug=fed_corpus).first().corpus
    authoring.study_items_build(study=study, corpus=corpus, reference_conversation="fed-d0", limit=3)
    authoring.study_publish(study=study)
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="me")
    )
    for slot in assignment.assignment_items.select_related("item"):
        answering.ratings_record(
            assignment=assignment,
            item_id=slot.item_id,
            answers={c: {slot.item.conversation_id: 200} for c in ("readability", "coherence")},
        )
    answering.assignment_submit(assignment=assignment)
    from studies.reports.selectors import ratings_frame

    frame = ratings_frame(Study.objects.filter(pk=study.pk))
    assert len(frame) == 6 and np.allclose(frame["score"], np.log10(2.0))
    assert set(frame["unit"]) == set(study.items.values_list("conversation_id", flat=True))
    assert json.loads(json.dumps(list(frame["target"].unique()))) == ["dialogue"]


def test_the_study_form_creates_a_dialogue_study_and_explains_a_refused_design(client, user):
    experiment = authoring.experiment_create(owner=user, title="Form", slug="form")
    client.force_login(user)
    form = {
        "title": "Dialogues",
        "criteria": "coherence",
        "raters_per_item": 3,
        "items_per_assignment": 5,
        "likert_points": 5,
        "platform": "invite",
        "unit": "dialogue",
    }
    page = client.get("/experiments/form/studies/new/").content.decode()
    assert 'name="unit"' in page and "Unit of judgement" in page
    refused = client.post("/experiments/form/studies/new/", {**form, "design": "bme"})
    assert refused.status_code == 200 and "BME is not offered for dialogue units" in refused.content.decode()
    assert not experiment.studies.exists()
    created = client.post("/experiments/form/studies/new/", {**form, "design": "likert"})
    assert created.status_code == 302
    study = experiment.studies.get()
    assert study.unit == "dialogue" and study.criteria.get().question == "How coherent is this dialogue as a whole?"
    assert "unit: A whole dialogue" in client.get(created["Location"]).content.decode()


def test_a_check_for_a_study_that_ranks_dialogues_waits_for_its_items(user):
    """A design ranking several dialogues per screen ranks the check's dialogue among the study's own
    (test_dialogue_set_checks walks it); before the items are built there are none to rank it with, and
    the refusal says so, creating nothing."""
    experiment = authoring.experiment_create(owner=user, title="Checks")
    study = authoring.study_create(experiment=experiment, title="d", design="bws", unit="dialogue",
                                   design_config={"tuple_size": 3})
    from studies.authoring import checks

    with pytest.raises(ValidationError) as refused:
        checks.check_item_create(study=study, kind="instructed", context="Hi", responses=["x"], rules=[])
    assert "build the study's items first" in str(refused.value)
    assert not study.items.exists()


def test_human_vs_metric_on_an_imported_fed_dialogue_benchmark_equals_the_file(user):
    records = [fed_dialogue(i, model=["Meena", "Mitsuku", "Human"][i % 3]) for i in range(12)]
    for i, record in enumerate(records):  # vary the scores so that the correlations are not degenerate
        record["annotations"]["Overall"] = [(i * 3 + k) % 5 for k in range(3)]
    records[5]["annotations"]["Overall"] = []  # a missing value: the dialogue drops out of this quality only
    summary = corpus_imports.dialogues_import(stream=io.BytesIO(dump(records)), source_name="fed-bench.json", owner=user)
    study = summary.benchmark_study
    metric = Metric.objects.create(key="self-eval-bench", name="SelF-Eval", level="dialogue", kind="learned")
    model = MetricModel.objects.create(metric=metric, name="self-eval-bench")
    ids = dict(Conversation.objects.filter(corpus=summary.corpus).values_list("external_id", "id"))
    values = {r["dialogue_id"]: float(np.cos(i)) for i, r in enumerate(records)}
    MetricScore.objects.bulk_create(
        [MetricScore(metric_model=model, conversation_id=ids[k], value=v) for k, v in values.items()]
    )
    report = compute_human_metric_report(Study.objects.filter(pk=study.pk), model, bootstrap=0)
    cell = next(c for c in report["cells"] if c["criterion"] == "overall")
    scored = [r for r in records if r["annotations"]["Overall"]]
    human = [np.mean(r["annotations"]["Overall"]) for r in scored]
    metric_values = [values[r["dialogue_id"]] for r in scored]
    assert cell["unit"] == "dialogue" and cell["n_responses"] == 11
    expected = stats.spearmanr(metric_values, human)
    assert cell["response_level"]["spearman"]["r"] == pytest.approx(expected.statistic, abs=1e-9)
    assert cell["response_level"]["spearman"]["p"] == pytest.approx(expected.pvalue, abs=1e-9)
    by_system = pd.DataFrame({"system": [r["model"].lower() for r in scored], "h": human, "m": metric_values})
    means = by_system.groupby("system").mean()
    assert cell["system_level"]["pearson"]["r"] == pytest.approx(
        stats.pearsonr(means["m"], means["h"]).statistic, abs=1e-9
    )


def test_researcher_preview_of_a_dialogue_item_shows_the_whole_dialogue(client, user, dialogue_study):
    client.force_login(user)
    item = dialogue_study.items.get(position=0)
    page = client.get(f"/studies/{dialogue_study.slug}/preview/").content.decode()
    assert 'data-testid="dialogue"' in page and page.count('class="turn ') == len(item.conversation.turns)
    assert 'name="rA-coherence"' in page and 'article class="card response"' not in page  # named by letter, not id


def test_bws_ranks_disjoint_tuples_of_whole_dialogues(api, user, fed_corpus):
    experiment = authoring.experiment_create(owner=user, title="BWS dialogues")
    study = authoring.study_create(
        experiment=experiment,
        title="bws",
        design="bws",
        unit="dialogue",
        design_config={"tuple_size": 3},
        raters_per_item=2,
        items_per_assignment=5,
    )
    corpus = Conversation.objects.filter(corpus__slug=fed_corpus).first().corpus
    assert authoring.study_items_build(study=study, corpus=corpus, seed=3) == N_DIALOGUES // 3
    shown = [list(item.item_conversations.values_list("conversation_id", flat=True)) for item in study.items.all()]
    assert all(len(group) == 3 for group in shown)
    flat = [cid for group in shown for cid in group]
    assert len(set(flat)) == len(flat)  # each dialogue on one screen only: a rater's rating of it is unique
    authoring.study_publish(study=study)
    ranks = {}
    for r in range(2):
        rater = rater_entry.rater_get_or_create(platform="invite", external_id=f"bws-{r}")
        assignment = rater_entry.assignment_start(study=study, rater=rater, seed=r)
        for slot in assignment.assignment_items.all():
            assert sorted(slot.response_order) == sorted(dialogue_targets(slot.item_id))
            with pytest.raises(ValidationError):  # a tie is refused, nothing stored
                answering.ratings_record(
                    assignment=assignment,
                    item_id=slot.item_id,
                    answers={c: dict.fromkeys(slot.response_order, 1) for c in ("readability", "coherence")},
                )
            given = {cid: (i + r) % 3 + 1 for i, cid in enumerate(slot.response_order)}
            answering.ratings_record(
                assignment=assignment, item_id=slot.item_id, answers={c: given for c in ("readability", "coherence")}
            )
            ranks.update({(r, cid): rank for cid, rank in given.items()})
        answering.assignment_submit(assignment=assignment)
    from studies.reports.selectors import ratings_frame

    frame = ratings_frame(Study.objects.filter(pk=study.pk))
    assert len(frame) == 2 * len(flat) * 2 and set(frame["unit"]) == set(flat)
    names = dict(
        Rating.objects.filter(assignment__study=study).values_list(
            "assignment__rater_id", "assignment__rater__external_id"
        )
    )
    for row in frame.itertuples():
        expected = ranks[(int(names[row.rater].split("-")[1]), row.unit)]
        assert row.rank == expected and row.score == 3 + 1 - expected  # m + 1 - rank with m = 3 dialogues
    report = api.get(f"/api/studies/{study.slug}/report/").json()
    assert {c["n_items"] for c in report["tables"]["table1"]} == {len(flat)}


def dialogue_targets(item_id: int) -> list[int]:
    from studies.designs import unit_for

    item_targets = unit_for("dialogue").item_targets

    return item_targets([item_id])[item_id]


def test_a_dialogue_level_scoring_run_on_a_dialogue_study_feeds_human_vs_metric(dialogue_study):
    """End to end across the two halves of dialogue-level evaluation: a real dialogue-level metric (the consecutive-turn
    coherence baseline) scores the study's conversations in a scoring run, and the human-vs-metric
    report correlates those stored scores with the dialogue ratings (checked against SciPy)."""
    from metrics.scoring import services as metric_services

    rate_everything(dialogue_study)
    model = metric_services.metric_model_default(key="coherence_turns")
    run = metric_services.scoring_run_execute(
        run=metric_services.scoring_run_create(metric_model=model, study=dialogue_study, enqueue=False))
    assert run.status == "done"
    conversations = set(dialogue_study.items.values_list("conversation_id", flat=True))
    scores = dict(MetricScore.objects.filter(metric_model=model).values_list("conversation_id", "value"))
    assert set(scores) == conversations and not MetricScore.objects.filter(metric_model=model, response__isnull=False)
    report = compute_human_metric_report(Study.objects.filter(pk=dialogue_study.pk), model, bootstrap=0)
    frame = pd.DataFrame(list(Rating.objects.filter(assignment__study=dialogue_study, criterion__name="coherence")
                              .values_list("conversation_id", "value")), columns=["conversation", "value"])
    human = frame.groupby("conversation")["value"].mean()
    cell = next(c for c in report["cells"] if c["criterion"] == "coherence")
    expected = stats.spearmanr([scores[c] for c in human.index], human.to_numpy())
    assert cell["unit"] == "dialogue" and cell["n_responses"] == len(conversations)
    assert cell["response_level"]["spearman"]["r"] == pytest.approx(expected.statistic, abs=1e-9)

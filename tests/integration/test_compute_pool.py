"""Against real PostgreSQL: report pages, figures and downloads answered by a real pool process, which reads
the rows the test committed (transactional_db) from the test database the web process uses."""
import pytest

from studies import compute_pool
from tests.metrics.test_ppi_estimates import corpus12, rated_study  # noqa: F401 (fixture)

pytestmark = [pytest.mark.integration]


@pytest.fixture
def pool(settings):
    settings.COMPUTE_POOL_WORKERS = 1
    settings.COMPUTE_POOL_DEADLINE_SECONDS = 120
    yield
    compute_pool.shutdown()


@pytest.mark.django_db(transaction=True)
def test_report_figure_and_download_from_the_pool(pool, client, user, other_user, corpus12):  # noqa: F811
    study = rated_study(user, corpus12)
    experiment = study.experiment
    client.force_login(user)
    page = client.get(f"/experiments/{experiment.slug}/report/")
    assert page.status_code == 200 and compute_pool.pool_pids()  # answered by a pool process
    assert "ICC" in page.content.decode()
    figure = client.get(f"/studies/{study.slug}/report/figures/icc.svg")
    assert figure.status_code == 200 and figure["Content-Type"] == "image/svg+xml"
    assert figure.content.startswith(b"<?xml") or b"<svg" in figure.content[:500]
    download = client.get(f"/api/experiments/{experiment.slug}/report/download/?format=csv")
    assert download.status_code == 200 and download["Content-Type"].startswith("text/csv")
    assert b"condition" in download.content.splitlines()[0]
    client.force_login(other_user)  # the pool answers as the request's user: another researcher sees nothing
    assert client.get(f"/experiments/{experiment.slug}/report/").status_code == 404
    assert client.get(f"/api/experiments/{experiment.slug}/report/").status_code == 404

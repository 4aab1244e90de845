"""Training on real worker processes (PostgreSQL + Redis): a QuantiDCE run queued on `gpu` is trained
by a worker that serves only that queue; when that worker is SIGKILLed mid-run, a second worker
resumes from the last checkpoint and finishes with every step once in the history."""
import signal

import pytest

from metrics.models import MetricModel, TrainingRun
from metrics.training import services as training
from tests.integration.test_scoring_workers import wait_for
from tests.ml.toy import tiny_encoder_dir, toy_ddpp

pytestmark = [pytest.mark.integration]


def test_a_killed_training_worker_is_resumed_from_its_checkpoint(start_worker, tmp_path, django_capture_on_commit_callbacks):
    encoder = tiny_encoder_dir(tmp_path / "encoder", hidden=64)
    train, dev = toy_ddpp(tmp_path / "train.json", 150, seed=1), toy_ddpp(tmp_path / "dev.json", 10, seed=2)
    first = start_worker("doomed-trainer", queues="gpu", CELERY_VISIBILITY_TIMEOUT="5")
    with django_capture_on_commit_callbacks(execute=True):
        run = training.training_run_create(metric="quantidce", stage="mlr", model_name="worker-mlr", encoder=str(encoder),
                                           train_data=str(train), validation_data=str(dev), epochs=3,
                                           learning_rate=1e-3, max_length=32, checkpoint_every=10,
                                           # the encoder trains (as on a GPU worker): the default frozen head on
                                           # cached features can finish all 150 steps before the kill lands
                                           freeze_encoder=False, output_dir=str(tmp_path / "out"))
    wait_for(lambda: TrainingRun.objects.get(pk=run.pk).checkpoint_path != "", 240, first, "a checkpoint")
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    run.refresh_from_db()
    assert run.status == "running" and run.attempts == 1 and 10 <= run.done < 150
    second = start_worker("rescuing-trainer", queues="gpu", CELERY_VISIBILITY_TIMEOUT="5")
    wait_for(lambda: TrainingRun.objects.get(pk=run.pk).status == "done", 400, second, "the resumed run to finish")
    run.refresh_from_db()
    assert run.attempts == 2 and run.done == run.total == 150  # 150 contexts / 3 a batch × 3 epochs
    assert [h["step"] for h in run.losses if "loss" in h] == list(range(1, 151))
    assert run.result == MetricModel.objects.get(name="worker-mlr") and run.result.metric.key == "quantidce"
    assert "training_run_execute" in second.log_path.read_text()

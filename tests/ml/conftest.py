"""Fixtures shared by the QuantiDCE training tests: a tiny random encoder saved once per module and
self-written toy DailyDialog++ / GRADE files (``tests.ml.toy``)."""
import pytest

from tests.ml.toy import tiny_encoder_dir, toy_ddpp, toy_grade


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    return tiny_encoder_dir(tmp_path_factory.mktemp("tiny") / "encoder")


@pytest.fixture(scope="module")
def toy_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("toy")
    return {"train": toy_ddpp(folder / "train.json", 40, seed=1), "validation": toy_ddpp(folder / "dev.json", 12, seed=2),
            "grade": toy_grade(folder / "grade.json", 60, seed=3)}

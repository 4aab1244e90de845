"""The documentation site (mkdocs.yml, docs/): it builds in strict mode, and its configuration page is the one
reference of the environment: every variable that config/ reads is documented there exactly once."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIGURATION = ROOT / "docs" / "configuration.md"

# env("X"), env.int("X", ...), environ.Env().str("X", ...), os.environ.get("X"), os.environ["X"], os.getenv("X"),
# the name possibly on the next line.
ENV_READ = re.compile(r"""(?:\benv(?:\(\))?(?:\.[a-z_]+)?|Env\(\)\.[a-z_]+|os\.environ\.get|os\.getenv|os\.environ\[)\(?\s*["']([A-Z][A-Z0-9_]+)["']""")
TABLE_ROW = re.compile(r"^\|\s*([^|]+?)\s*\|", flags=re.M)


def variables_read_in_config() -> dict[str, set[str]]:
    read: dict[str, set[str]] = {}
    for path in sorted((ROOT / "config").rglob("*.py")):
        for name in ENV_READ.findall(path.read_text()):
            read.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return read


def documented_rows(text: str) -> list[list[str]]:
    """The variables each table row names in its first column (`A`, `B` names two)."""
    rows = []
    for first in TABLE_ROW.findall(text):
        names = re.findall(r"`([A-Z][A-Z0-9_]+)`", first)
        if names:
            rows.append(names)
    return rows


def test_the_variable_reader_finds_reads_across_lines_and_forms():
    source = 'A = env.int(\n    "ONE", default=1)\nB = os.environ.get("TWO", "3")\nC = environ.Env().str("THREE")\nD = env("FOUR")'
    assert set(ENV_READ.findall(source)) == {"ONE", "TWO", "THREE", "FOUR"}


def configuration_problems(read: dict[str, set[str]], page: str) -> tuple[dict[str, list[str]], list[str]]:
    """(variables read but undocumented, with the files reading them; variables documented more than once)."""
    named = [name for row in documented_rows(page) for name in row]
    undocumented = {name: sorted(where) for name, where in read.items() if name not in named}
    return undocumented, sorted({name for name in named if named.count(name) > 1})


def test_every_variable_read_in_config_is_documented_once_in_the_configuration_page():
    read = variables_read_in_config()
    assert {"DATABASE_URL", "CONCORD_CHAT_CALL_THREADS", "WEB_CONCURRENCY", "CONCORD_VAR_DIR"} <= set(read)
    undocumented, twice = configuration_problems(read, CONFIGURATION.read_text())
    assert undocumented == {}, f"read in config/ but not in docs/configuration.md: {undocumented}"
    assert twice == [], f"documented more than once in docs/configuration.md: {twice}"


def test_a_variable_documented_twice_or_left_out_is_caught():
    page = "| variable | default |\n| --- | --- |\n| `AA`, `BB` | 1 |\n| `BB` | 2 |\n"
    read = {"AA": {"config/x.py"}, "BB": {"config/x.py"}, "CC": {"config/y.py"}}
    assert configuration_problems(read, page) == ({"CC": ["config/y.py"]}, ["BB"])


def test_the_readme_is_a_front_page():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200


def test_the_documentation_site_builds_in_strict_mode(tmp_path):
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    if not mkdocs:
        pytest.skip("mkdocs is not installed: pip install -r requirements.txt")
    built = subprocess.run([mkdocs, "build", "--strict", "--quiet", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                           capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert (tmp_path / "site" / "configuration" / "index.html").is_file()

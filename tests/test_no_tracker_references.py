"""Comments, docstrings, templates and tests say why the code is so, never which tracker entry asked for it: a
reader of the repository has no tracker, and history belongs in commit messages."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("studies", "crowd", "metrics", "ml", "config", "templates", "tests", "static", "benchmarks", "docs",
           "docker", ".ci")
FILES = ("Makefile", "README.md", "mkdocs.yml", "pyproject.toml", "requirements.txt")
TRACKER_REFERENCE = re.compile(r"\bissue #?\d+", flags=re.I)


def test_no_code_template_or_test_names_a_tracker_entry():
    found = []
    paths = [p for folder in FOLDERS for p in sorted((ROOT / folder).rglob("*"))] + [ROOT / f for f in FILES]
    for path in paths:
        if path.name not in FILES and path.suffix not in {".py", ".html", ".txt", ".js", ".md", ".css", ".yml", ".sh"}:
            continue
        if not path.is_file() or "site-packages" in path.parts:
            continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
                if TRACKER_REFERENCE.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert found == [], "tracker references:\n" + "\n".join(found)


def test_the_pattern_catches_the_forms_used_before():
    word = "issue"  # the examples are built, so that this file holds none of them
    for text in (f"({word} 33)", f"{word.title()} #26 (walkthrough):", f"# {word} 27: the head", f"{word} 15's ablation"):
        assert TRACKER_REFERENCE.search(text), text
    assert not TRACKER_REFERENCE.search("an issue with 3 raters")

"""The structural rules of docs/architecture.md as checks (issue 38), read from the code itself.

- Outside ``studies/designs/`` and ``studies/models/`` (and migrations), no code compares a study's design
  to a member of the ``Design`` enumeration; the members are taken from the enumeration, so a seventh
  design is covered without editing this file. A comparison is ``==``/``!=``/``in``/``is`` with
  ``Design.MEMBER`` (or a tuple, list or set holding one), with a design's value as a string beside
  something named ``design``, or a ``case`` on either; templates are searched for ``design == "value"``.
- No module over 600 lines in studies/, crowd/ or metrics/ (migrations aside)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from studies.models import Design

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("studies", "crowd", "metrics", "config", "architecture")
ALLOWED = ("studies/designs/", "studies/models/")
LINE_CAP = 600


def _is_member(node: ast.AST) -> bool:
    """``Design.LIKERT`` or ``choices.Design.LIKERT``: an attribute named like a member, read off ``Design``."""
    if not (isinstance(node, ast.Attribute) and node.attr in Design.names):
        return False
    owner = node.value
    return (isinstance(owner, ast.Name) and owner.id == "Design") or \
        (isinstance(owner, ast.Attribute) and owner.attr == "Design")


def _mentions_design(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and "design" in n.id.lower() or
               isinstance(n, ast.Attribute) and "design" in n.attr.lower() for n in ast.walk(node))


def _is_value(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in Design.values


def _operands(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return list(node.elts)
    return [node]


def _decides(node: ast.AST) -> bool:
    if isinstance(node, ast.Compare):
        sides = [node.left, *node.comparators]
        operands = [o for side in sides for o in _operands(side)]
        if any(_is_member(o) for o in operands):
            return True
        return any(_is_value(o) for o in operands) and any(_mentions_design(s) for s in sides)
    if isinstance(node, ast.Match):
        patterns = [n for case in node.cases for n in ast.walk(case.pattern) if isinstance(n, ast.MatchValue)]
        return any(_is_member(p.value) for p in patterns) or \
            (_mentions_design(node.subject) and any(_is_value(p.value) for p in patterns))
    return False


def design_decisions(root: Path = ROOT) -> list[str]:
    """``path:line`` of every comparison of a design to a specific member outside the allowed places."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative.startswith(ALLOWED) or "/migrations/" in relative:
                continue
            found += [f"{relative}:{n.lineno}" for n in ast.walk(ast.parse(path.read_text())) if _decides(n)]
    values = "|".join(re.escape(v) for v in Design.values)
    in_template = re.compile(rf"design(\.\w+)?\s*(==|!=)\s*['\"]({values})['\"]")
    for path in sorted((root / "templates").rglob("*.html")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if in_template.search(line):
                found.append(f"{path.relative_to(root).as_posix()}:{number}")
    return found


def long_modules(root: Path = ROOT) -> list[str]:
    found = []
    for package in ("studies", "crowd", "metrics"):
        for path in sorted((root / package).rglob("*.py")):
            if "/migrations/" not in path.as_posix():
                lines = len(path.read_text().splitlines())
                if lines > LINE_CAP:
                    found.append(f"{path.relative_to(root).as_posix()}: {lines} lines")
    return found


def test_no_code_outside_the_designs_compares_a_design_to_a_member():
    assert design_decisions() == []


def test_the_check_finds_each_kind_of_decision(tmp_path):
    last = Design.names[-1]  # whichever member the enumeration lists last, not a name written here
    value = Design.values[-1]
    planted = {
        "studies/authoring/planted.py": f"from studies.models import Design\n\n\ndef f(study):\n"
                                        f"    return study.design == Design.{last}\n",
        "crowd/planted.py": f"def f(study):\n    if study.design in ('{value}', 'x'):\n        return 1\n",
        "metrics/planted.py": f"def f(s):\n    match s.design:\n        case Design.{last}:\n            return 1\n",
        "studies/designs/allowed.py": f"def f(study):\n    return study.design == Design.{last}\n",
        "studies/rating/fine.py": "def f(study):\n    return design_for(study).ranks\n",
    }
    for relative, text in planted.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    (tmp_path / "templates" / "raters").mkdir(parents=True)
    (tmp_path / "templates" / "raters" / "x.html").write_text(f'<p>{{% if study.design == "{value}" %}}x{{% endif %}}</p>\n')
    assert design_decisions(tmp_path) == ["studies/authoring/planted.py:5", "crowd/planted.py:2", "metrics/planted.py:2",
                                          "templates/raters/x.html:1"]


def test_no_module_over_the_line_cap():
    assert long_modules() == []


def test_the_cap_counts_lines_and_skips_migrations(tmp_path):
    for relative, lines in (("studies/big.py", LINE_CAP + 1), ("studies/fits.py", LINE_CAP),
                            ("crowd/migrations/0001_big.py", LINE_CAP * 2)):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("x = 1\n" * lines)
    assert long_modules(tmp_path) == [f"studies/big.py: {LINE_CAP + 1} lines"]

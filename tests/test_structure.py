"""The structural rules of docs/architecture.md as checks, read from the code itself.

- Outside ``studies/designs/`` and ``studies/models/`` (and migrations), no code compares a study's design
  to a member of the ``Design`` enumeration; the members are taken from the enumeration, so a seventh
  design is covered without editing this file. A comparison is ``==``/``!=``/``in``/``is`` with
  ``Design.MEMBER`` (or a tuple, list or set holding one), with a design's value as a string beside
  something named ``design``, or a ``case`` on either; templates are searched for ``design == "value"``.
- No module over 600 lines in studies/, crowd/, metrics/ or ml/ (migrations aside).
- Counted from every module's syntax tree, imports inside functions included (a late import only hides an
  arrow): no two subpackages of ``studies/`` or of ``metrics/`` import each other, and no import circle among the modules of
  studies/, crowd/, metrics/ and ml/. ``lint-imports`` keeps the same rules as contracts; this reads the
  code without it."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from architecture.acyclic import strongly_connected
from studies.models import Design

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("studies", "crowd", "metrics", "config", "architecture")
ALLOWED = ("studies/designs/", "studies/models/")
LINE_CAP = 600
CONTAINERS = ("studies", "crowd", "metrics", "ml")


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
    for package in ("studies", "crowd", "metrics", "ml"):
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


def _modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file of every module in the containers (a package by its ``__init__.py``)."""
    found = {}
    for package in CONTAINERS:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of the containers that one module imports, anywhere in it (``ast.walk`` enters functions);
    ``from a import b`` counts as importing ``a.b`` where that is a module, else ``a``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    imported = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = ".".join(parts[:len(parts) - node.level + 1] + [node.module or ""]).strip(".") if node.level \
                else node.module or ""
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # a name inside a module, or nothing of ours (django)
                target = target.rpartition(".")[0]
            if target and target != name:
                imported.add(target)
    return imported


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    modules = _modules(root)
    return {name: _imports_of(name, path, modules) for name, path in modules.items()}


def subpackages_importing_each_other(graph: dict[str, set[str]], root: Path = ROOT,
                                     package: str = "studies") -> list[tuple[str, str]]:
    """Pairs of ``package``'s subpackages (folders) with an import each way, from any of their modules."""
    subpackages = {p.parent.name for p in (root / package).glob("*/__init__.py")}

    def subpackage(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if parts[0] == package and len(parts) > 1 and parts[1] in subpackages else None

    arrows = {(subpackage(a), subpackage(b)) for a, targets in graph.items() for b in targets}
    arrows = {(a, b) for a, b in arrows if a and b and a != b}
    return sorted((a, b) for a, b in arrows if (b, a) in arrows and a < b)


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    return strongly_connected(set(graph), graph)


def test_no_two_studies_subpackages_import_each_other():
    assert subpackages_importing_each_other(import_graph()) == []


def test_no_two_metrics_subpackages_import_each_other():
    graph = import_graph()
    assert {"metrics.implementations.base", "metrics.judging.client"} <= set(graph)
    assert subpackages_importing_each_other(graph, package="metrics") == []


def test_no_import_circle_in_studies_crowd_metrics_or_ml():
    graph = import_graph()
    assert {"studies.rating.entry", "metrics.registry", "crowd.models", "ml"} <= set(graph)  # every container read
    assert import_circles(graph) == []


def test_the_import_checks_see_late_and_relative_imports(tmp_path):
    planted = {
        "studies/__init__.py": "",
        "studies/upper/__init__.py": "",
        "studies/upper/views.py": "from studies.lower import pages\n",
        "studies/lower/__init__.py": "",
        "studies/lower/pages.py": "def page():\n    from studies.upper.views import x  # late\n    return x\n",
        "studies/lower/fine.py": "from . import pages\nfrom .pages import page\nimport django.db\n",
        "metrics/__init__.py": "",
        "metrics/a.py": "def f():\n    from .b import g\n    return g\n",
        "metrics/b.py": "from metrics import a\n",
    }
    for relative, text in planted.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    graph = import_graph(tmp_path)
    assert graph["studies.lower.fine"] == {"studies.lower.pages"}
    assert subpackages_importing_each_other(graph, tmp_path) == [("lower", "upper")]
    assert import_circles(graph) == [["metrics.a", "metrics.b"], ["studies.lower.pages", "studies.upper.views"]]

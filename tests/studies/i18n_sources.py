"""What the translation tests read without GNU gettext (CI may have no msgfmt): the rater templates, the
visible text left in them outside the translation tags, the message ids the templates and our Python code
mark for translation, and the shipped catalogues (.po parsed here, .mo read by the standard library)."""
from __future__ import annotations

import ast
import gettext
import re
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.template import engines
from django.templatetags.i18n import BlockTranslateNode, TranslateNode

ROOT = Path(settings.BASE_DIR)
# Every page a rater reads: the rater pages and their partials (items, designs, judgement kinds, chat,
# ACUTE, practice feedback, done and completion code).
RATER_TEMPLATES = sorted((ROOT / "templates" / "raters").rglob("*.html"))
RATER_SCRIPTS = [ROOT / "static" / "concord" / name for name in
                 ("rater.js", "rater_pairwise.js", "rater_bws_tuples.js", "rater_spans.js", "chat.js",
                  "scroll_regions.js")]
TRANSLATED_LANGUAGES = [code for code, _name in settings.LANGUAGES if code != "en"]
GETTEXT_NAMES = {"gettext", "gettext_lazy", "gettext_noop", "_", "ngettext", "ngettext_lazy"}
# Attributes a browser shows or reads aloud.
VISIBLE_ATTRIBUTES = ("aria-label", "title", "placeholder", "alt", "aria-description")

_BLOCK_TRANSLATE = re.compile(r"{%\s*blocktrans(?:late)?\b.*?%}.*?{%\s*endblocktrans(?:late)?\s*%}", re.S)
_COMMENT_BLOCK = re.compile(r"{%\s*comment\s*%}.*?{%\s*endcomment\s*%}", re.S)
_TEMPLATE_SYNTAX = re.compile(r"{%.*?%}|{{.*?}}|{#.*?#}", re.S)
_SCRIPT_OR_STYLE = re.compile(r"<(script|style)\b.*?</\1>", re.S | re.I)
_TAG = re.compile(r"<[^>]*>", re.S)
_ATTRIBUTE = re.compile(r"""\b(""" + "|".join(VISIBLE_ATTRIBUTES) + r""")\s*=\s*("([^"]*)"|'([^']*)')""", re.I)
_ENTITY = re.compile(r"&[#\w]+;")
_WORDLESS = re.compile(r"^[\W\d_]*$")  # punctuation, digits, symbols (⠿ ↑ – …), spaces


def untranslated_text(source: str) -> list[str]:
    """The pieces of a template a reader would see (text between tags, visible attributes) that are
    not inside the translation machinery and contain a letter."""
    text = _BLOCK_TRANSLATE.sub(" ", source)
    text = _COMMENT_BLOCK.sub(" ", text)
    text = _TEMPLATE_SYNTAX.sub(" ", text)
    text = _SCRIPT_OR_STYLE.sub(" ", text)
    pieces = [m.group(3) if m.group(3) is not None else m.group(4) for m in _ATTRIBUTE.finditer(text)]
    pieces += _TAG.sub("\n", text).split("\n")
    found = []
    for piece in pieces:
        piece = _ENTITY.sub(" ", piece).strip()
        if piece and not _WORDLESS.match(piece):
            found.append(piece)
    return found


def template_msgids(path: Path) -> set[str]:
    """The message ids of ``{% translate %}`` and ``{% blocktranslate %}`` in one template (both plural forms)."""
    template = engines["django"].engine.from_string(path.read_text(encoding="utf-8"))
    ids: set[str] = set()
    for node in template.nodelist.get_nodes_by_type(TranslateNode):
        literal = node.filter_expression.var.literal
        if literal is not None:
            ids.add(str(literal))
    for node in template.nodelist.get_nodes_by_type(BlockTranslateNode):
        ids.add(node.render_token_list(node.singular)[0])
        if node.plural and node.countervar:
            ids.add(node.render_token_list(node.plural)[0])
    return ids


def python_msgids(path: Path) -> set[str]:
    """The string literals our Python code passes to gettext and friends (first two arguments for ngettext)."""
    ids: set[str] = set()
    for call in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(call, ast.Call):
            continue
        name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")
        if name not in GETTEXT_NAMES:
            continue
        for arg in call.args[:2 if name.startswith("ngettext") else 1]:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                ids.add(arg.value)
    return ids


def project_python_files() -> list[Path]:
    skip = {".venv", "tests", "var", "staticfiles", "node_modules", "docker", "benchmarks"}
    return [p for p in ROOT.rglob("*.py") if not skip & set(p.relative_to(ROOT).parts)]


def all_msgids() -> set[str]:
    ids: set[str] = set()
    for path in sorted((ROOT / "templates").rglob("*.html")):
        if "{% load" in (text := path.read_text(encoding="utf-8")) and "i18n" in text:
            ids |= template_msgids(path)
    for path in project_python_files():
        if "gettext" in path.read_text(encoding="utf-8"):
            ids |= python_msgids(path)
    return ids


def script_texts() -> set[str]:
    """Every ``t("...")`` text of the rater scripts."""
    found: set[str] = set()
    for path in RATER_SCRIPTS:
        found |= {m.group(1) for m in re.finditer(r'\bt\("((?:[^"\\]|\\.)*)"', path.read_text(encoding="utf-8"))}
    return found


@dataclass
class Entry:
    msgid: str
    msgid_plural: str | None = None
    msgstr: dict[int, str] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    msgctxt: str | None = None


def _unquote(text: str) -> str:
    return ast.literal_eval(text)


def po_entries(path: Path) -> tuple[Entry, list[Entry]]:
    """(the header, the messages) of a .po file."""
    entries: list[Entry] = []
    current: Entry | None = None
    key: tuple[str, int] | None = None
    for raw in path.read_text(encoding="utf-8").splitlines() + [""]:
        line = raw.strip()
        if not line:
            if current is not None:
                entries.append(current)
            current, key = None, None
            continue
        if current is None:
            current = Entry(msgid="")
        if line.startswith("#,"):
            current.flags += [flag.strip() for flag in line[2:].split(",")]
        elif line.startswith("#"):
            continue
        elif match := re.match(r"(msgctxt|msgid_plural|msgid|msgstr)(?:\[(\d+)\])?\s+(\".*\")$", line):
            name, index, value = match.group(1), int(match.group(2) or 0), _unquote(match.group(3))
            key = (name, index)
            if name == "msgstr":
                current.msgstr[index] = value
            else:
                setattr(current, name, value)
        elif line.startswith('"') and key is not None:
            name, index = key
            if name == "msgstr":
                current.msgstr[index] += _unquote(line)
            else:
                setattr(current, name, getattr(current, name) + _unquote(line))
    return entries[0], entries[1:]


def catalogue_path(language: str, suffix: str = "po") -> Path:
    return ROOT / "locale" / language / "LC_MESSAGES" / f"django.{suffix}"


def compiled(language: str) -> gettext.GNUTranslations:
    with catalogue_path(language, "mo").open("rb") as handle:
        return gettext.GNUTranslations(handle)

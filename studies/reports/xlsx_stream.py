"""A minimal streaming XLSX writer for long tables (the ratings export): rows go straight into the zip
as SpreadsheetML, one at a time, so memory does not grow with the table and a million rows take
seconds rather than minutes (openpyxl's write-only mode, without lxml, writes about a thousand rows a
second here; ``benchmarks/export_speed.py`` measures both).

What it writes (ECMA-376 Part 1, the subset every spreadsheet reads): one or more sheets with a bold,
frozen, filterable header row; numbers as numbers, booleans as booleans, text as inline strings;
no formulas. A sheet holds at most ``MAX_ROWS`` rows (Excel's limit, header included): further rows
continue on "<name> 2", "<name> 3", ... under the same header. Text that XML cannot carry (control
characters other than tab, newline and carriage return) is dropped; text longer than Excel's 32,767
characters a cell is cut and ends with ``cut_mark``. NaN and infinities, which a cell cannot hold,
are left empty.
"""
from __future__ import annotations

import math
import re
import zipfile
from collections.abc import Iterable, Sequence
from typing import Any, BinaryIO
from xml.sax.saxutils import escape

MAX_ROWS = 1_048_576
MAX_CELL = 32_767
ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
CHUNK_ROWS = 500  # rows per write to the zip stream

CONTENT_TYPES = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>
<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>
{sheets}</Types>"""
SHEET_TYPE = ('<Override PartName="/xl/worksheets/sheet{n}.xml" '
              'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>\n')
ROOT_RELS = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/>
</Relationships>"""
WORKBOOK = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">
<sheets>{sheets}</sheets><definedNames>{names}</definedNames></workbook>"""
WORKBOOK_RELS = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
{sheets}<Relationship Id="rIdStyles" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>
</Relationships>"""
STYLES = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">
<fonts count="2"><font><sz val="11"/><name val="Calibri"/></font><font><b/><sz val="11"/><name val="Calibri"/></font></fonts>
<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill></fills>
<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>
<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>
<cellXfs count="2"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/><xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/></cellXfs>
<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>
</styleSheet>"""
SHEET_START = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">
<sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/></sheetView></sheetViews>
<sheetData>"""
SHEET_END = '</sheetData><autoFilter ref="A1:{last}1"/></worksheet>'


def column_letter(index: int) -> str:
    """0 -> "A", 25 -> "Z", 26 -> "AA"."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def text_value(value: str, cut_mark: str) -> str:
    """``value`` as XML-safe cell text: characters XML 1.0 cannot carry dropped, cut to fit a cell."""
    value = ILLEGAL_XML.sub("", value)
    if len(value) > MAX_CELL:
        value = value[: MAX_CELL - len(cut_mark)] + cut_mark
    return value


def _cell(ref: str, value: Any, cut_mark: str, style: str = "") -> str:
    if value is None or value == "":  # an empty cell, as in the CSV
        return ""
    if isinstance(value, bool):
        return f'<c r="{ref}"{style} t="b"><v>{int(value)}</v></c>'
    if isinstance(value, int):
        return f'<c r="{ref}"{style}><v>{value}</v></c>'
    if isinstance(value, float):
        return f'<c r="{ref}"{style}><v>{value!r}</v></c>' if math.isfinite(value) else ""
    text = escape(text_value(str(value), cut_mark))
    return f'<c r="{ref}"{style} t="inlineStr"><is><t xml:space="preserve">{text}</t></is></c>'


class _Sheet:
    def __init__(self, book: zipfile.ZipFile, number: int, header: Sequence[str], letters: list[str], cut_mark: str):
        self.number, self.letters, self.cut_mark = number, letters, cut_mark
        self.stream = book.open(f"xl/worksheets/sheet{number}.xml", "w", force_zip64=True)
        self.stream.write(SHEET_START.encode())
        self.rows, self.pending = 0, []
        self.append(header, style=' s="1"')

    def append(self, row: Sequence[Any], style: str = "") -> None:
        self.rows += 1
        r = self.rows
        cells = "".join(_cell(f"{letter}{r}", value, self.cut_mark, style)
                        for letter, value in zip(self.letters, row, strict=False))
        self.pending.append(f'<row r="{r}">{cells}</row>')
        if len(self.pending) >= CHUNK_ROWS:
            self.flush()

    def flush(self) -> None:
        self.stream.write("".join(self.pending).encode())
        self.pending = []

    def close(self) -> None:
        self.flush()
        self.stream.write(SHEET_END.format(last=self.letters[-1]).encode())
        self.stream.close()


def write_xlsx(output: BinaryIO, header: Sequence[str], rows: Iterable[Sequence[Any]], *, sheet_name: str = "Sheet",
               cut_mark: str = "…", max_rows: int = MAX_ROWS) -> int:
    """Write ``rows`` under ``header`` as an XLSX workbook to ``output``; returns the number of rows
    (header excluded). ``max_rows`` counts the header, as Excel does."""
    letters = [column_letter(i) for i in range(max(1, len(header)))]
    count = 0
    with zipfile.ZipFile(output, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as book:
        sheets = [_Sheet(book, 1, header, letters, cut_mark)]
        for row in rows:
            if sheets[-1].rows >= max_rows:
                sheets[-1].close()
                sheets.append(_Sheet(book, len(sheets) + 1, header, letters, cut_mark))
            sheets[-1].append(row)
            count += 1
        sheets[-1].close()
        names = [sheet_name if n == 1 else f"{sheet_name} {n}" for n in range(1, len(sheets) + 1)]
        book.writestr("[Content_Types].xml", CONTENT_TYPES.format(
            sheets="".join(SHEET_TYPE.format(n=n) for n in range(1, len(sheets) + 1))))
        book.writestr("_rels/.rels", ROOT_RELS)
        book.writestr("xl/workbook.xml", WORKBOOK.format(
            sheets="".join(f'<sheet name="{escape(name)}" sheetId="{n}" r:id="rId{n}"/>'
                           for n, name in enumerate(names, 1)),
            names="".join(f'<definedName name="_xlnm._FilterDatabase" localSheetId="{n - 1}" hidden="1">'
                          f"'{escape(name)}'!$A$1:${letters[-1]}$1</definedName>" for n, name in enumerate(names, 1))))
        book.writestr("xl/_rels/workbook.xml.rels", WORKBOOK_RELS.format(sheets="".join(
            f'<Relationship Id="rId{n}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
            f'worksheet" Target="worksheets/sheet{n}.xml"/>\n' for n in range(1, len(sheets) + 1))))
        book.writestr("xl/styles.xml", STYLES)
    return count

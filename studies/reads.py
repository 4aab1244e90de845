"""Reads shared by a report's sections: a queryset's rows as a DataFrame straight from the database
cursor (``queryset_frame``), and ``one_read``, a block inside which each read is made once.

``queryset_frame``:
``values_list`` runs Django's converters on every value of every row in Python (a float() per
normalised score, a bool() per rater answer): at 100,000 ratings that is most of the cost of reading
them. Here the query is compiled by Django as usual and executed on a raw cursor; a column with
converters is then converted as one column: booleans vectorised, the columns the caller casts to
float itself (``floats``) left to that cast, anything else through Django's own converters on that
column alone. The frame holds the values ``values_list`` would give."""
from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import QuerySet

if TYPE_CHECKING:
    import pandas as pd

T = TypeVar("T")
_READ: ContextVar[dict | None] = ContextVar("report_read", default=None)


@contextmanager
def one_read() -> Iterator[None]:
    """Inside this block (a report page, a figure) each read made through ``once`` (the ratings'
    version, their frame, the best-worst annotations) is made once per set of studies and shared by
    the sections that ask for it, instead of once each. Outside it every call reads the database
    afresh, so nothing read in one request survives into another."""
    token = _READ.set({})
    try:
        yield
    finally:
        _READ.reset(token)


def once(kind: str, studies: QuerySet, compute: Callable[[], T], *extra: Any) -> T:
    """``compute()``, or what it gave earlier in the same ``one_read`` block for the same studies
    (identified by their query's SQL) and ``extra``. Shared results are read-only: copy to change."""
    memo = _READ.get()
    if memo is None:
        return compute()
    try:
        key = (kind, str(studies.query), *extra)
    except EmptyResultSet:  # a query that can match nothing has no SQL: nothing worth sharing
        return compute()
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def _booleans(values: list) -> list:
    """SQLite's 0/1 as bool, None kept (what ``convert_booleanfield_value`` does, per column)."""
    return [None if v is None else bool(v) for v in values]


def _json_column(values: list, converters: list, expression: Any) -> list | None:
    """A JSON column's texts parsed as one JSON array (one ``json.loads``, not one per value through
    ``JSONField.from_db_value``): the same values where every one is a JSON text or None; None (convert
    value by value) where the column is not a plain JSONField read as text, or a value is not valid JSON
    on its own (the field's converter then keeps that text as it is)."""
    from django.db.models import JSONField
    from django.db.models.fields.json import KeyTransform

    if len(converters) != 1 or isinstance(expression, KeyTransform):
        return None
    field = getattr(converters[0], "__self__", None)
    if not (type(field) is JSONField and field.decoder is None and getattr(converters[0], "__name__", "") == "from_db_value"):
        return None
    if not all(value is None or type(value) is str for value in values):
        return None
    try:
        parsed = json.loads("[" + ",".join("null" if value is None else value for value in values) + "]")
    except json.JSONDecodeError:
        return None
    if len(parsed) != len(values):
        return None  # a text that was not one JSON value (e.g. "1,2") merged with its neighbours
    return parsed


def queryset_frame(queryset: QuerySet, columns: list[str], *, floats: Collection[str] = ()) -> pd.DataFrame:
    """The rows of ``queryset`` (a ``values_list`` of as many fields as ``columns``) as a DataFrame
    with those column names, read through a raw cursor. ``floats``: columns the caller turns into
    float64 itself (``pd.to_numeric(...).astype(float)``), whose per-value float() is skipped."""
    import pandas as pd

    compiler = queryset.query.get_compiler(queryset.db)
    try:
        sql, params = compiler.as_sql()
    except EmptyResultSet:  # an always-empty filter (``pk__in=[]``)
        return pd.DataFrame.from_records([], columns=columns)
    connection = connections[queryset.db]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not rows:
        return pd.DataFrame.from_records([], columns=columns)
    frame = pd.DataFrame.from_records(rows, columns=columns)
    selected = [expression for expression, _, _ in compiler.select][:len(columns)]
    for position, (converters, expression) in compiler.get_converters(selected).items():
        name = columns[position]
        names = {getattr(fn, "__name__", "") for fn in converters}
        if name in floats and all(getattr(fn, "__qualname__", "").startswith("BaseExpression.convert_value")
                                  for fn in converters):
            continue
        values = frame[name].tolist()
        if names == {"convert_booleanfield_value"}:
            values = _booleans(values)
        elif (parsed := _json_column(values, converters, expression)) is not None:
            values = parsed
        else:
            for fn in converters:
                values = [fn(v, expression, connection) for v in values]
        frame[name] = pd.Series(values, index=frame.index)  # dtype inferred, as values_list's frame
    return frame

"""Reading the API's one error envelope (config.errors, RFC 9457 problem details) in tests."""
from __future__ import annotations


def problem_fields(response) -> dict[str | None, list[str]]:
    """The problem's field errors as ``{field path: [messages]}`` (None: the request as a whole)."""
    body = response.json()
    assert set(body) >= {"type", "title", "status", "detail", "errors"}, body
    assert body["status"] == response.status_code
    fields: dict[str | None, list[str]] = {}
    for error in body["errors"]:
        fields.setdefault(error["field"], []).append(error["message"])
    return fields

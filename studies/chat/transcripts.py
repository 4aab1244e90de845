"""A chat study's transcripts as a streamed JSON-lines download: one chat a line, its turns with their timing
(``studies.chat.selectors.study_chats``). The page's export and the API's route send the same file."""
from __future__ import annotations

import json

from django.http import StreamingHttpResponse

from studies.chat import selectors
from studies.models import Study
from studies.reports.exporting import no_store


def transcripts_response(study: Study, *, raw_ids: bool) -> StreamingHttpResponse:
    """The study's chats, one JSON object a line (raters by pseudonym unless ``raw_ids``), never cached."""
    lines = (json.dumps(row, ensure_ascii=False) + "\n" for row in selectors.study_chats(study, raw_ids=raw_ids))
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-chats.jsonl"'
    return no_store(response)

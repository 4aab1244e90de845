"""Any corpus imported into Concord as SelF-Eval's dialogue source: ``--train corpus:SLUG`` (or
``--validation corpus:SLUG``) writes the corpus's conversations — their turns, plus the reference
response where the corpus has one, as the dialogue's last turn — to a JSON-lines file of
``{"id", "turns": [{"speaker", "text"}...]}`` (the plain-dialogue format ``ml.data.replacement``
reads), and the run trains on that file. The file lands under ARTIFACTS_DIR/dialogues/, named by the
corpus and the export time, so a run keeps reading what it started with."""
from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from studies.models import Conversation, Corpus, Response

PREFIX = "corpus:"


def corpus_dialogues_export(*, slug: str) -> Path:
    corpus = Corpus.objects.filter(slug=slug).first()
    if corpus is None:
        raise ValueError(f"train_data: no corpus {slug!r}")
    references = dict(Response.objects.filter(conversation__corpus=corpus, is_reference=True)
                      .values_list("conversation_id", "text"))
    folder = Path(settings.ARTIFACTS_DIR) / "dialogues"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{slug}-{timezone.now():%Y%m%d%H%M%S%f}.jsonl"
    count = 0
    with path.open("w", encoding="utf-8") as stream:
        for pk, external_id, turns in Conversation.objects.filter(corpus=corpus).order_by("pk").values_list(
                "pk", "external_id", "turns").iterator():
            turns = [t for t in turns if isinstance(t, dict) and str(t.get("text", "")).strip()]
            if pk in references:
                turns.append({"speaker": "reference", "text": references[pk]})
            if len(turns) >= 2:
                stream.write(json.dumps({"id": external_id, "turns": turns}) + "\n")
                count += 1
    if count < 2:
        path.unlink()
        raise ValueError(f"train_data: corpus {slug!r} has fewer than two dialogues of two turns or more")
    return path


def resolve(value: str) -> str:
    """``corpus:SLUG`` -> the exported file's path; anything else unchanged."""
    return str(corpus_dialogues_export(slug=value[len(PREFIX):])) if value.startswith(PREFIX) else value

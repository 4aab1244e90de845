"""The corpus browser's pages: the researcher's corpora, one corpus's conversations (found by text,
system and speaker, a page at a time) and one conversation as raters would see it, with its system,
persona and settings. Reads only (``browsing``); another researcher's corpus is a 404."""
from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, render

from studies.corpora import browsing

MAX_QUERY = 200  # characters of a search field used (a longer one is cut, never a 500)


def _corpus(request, slug: str):
    return get_object_or_404(browsing.corpora_browsed(request.user), slug=slug)


@login_required
def corpus_list(request):
    return render(request, "studies/corpus_list.html", {"corpora": browsing.corpora_browsed(request.user)})


@login_required
def corpus_detail(request, slug):
    corpus = _corpus(request, slug)
    wanted = {k: request.GET.get(k, "").strip()[:MAX_QUERY] for k in ("q", "system", "speaker")}
    found = browsing.conversations_found(corpus, text=wanted["q"], system=wanted["system"], speaker=wanted["speaker"])
    page = Paginator(found, browsing.PAGE_SIZE).get_page(request.GET.get("page", 1))
    rows = [{"conversation": c, "preview": browsing.preview_text(c), "speakers": browsing.conversation_speakers(c),
             "system": (c.metadata or {}).get("system", "") if isinstance(c.metadata, dict) else ""}
            for c in page.object_list]
    systems, speakers = browsing.corpus_systems_and_speakers(corpus)
    return render(request, "studies/corpus_detail.html", {
        "corpus": corpus, "page": page, "rows": rows, "wanted": wanted, "systems": systems, "speakers": speakers,
        "query": urlencode({k: v for k, v in wanted.items() if v}),
        "filtered": any(wanted.values()), "total": corpus.conversations.count(),
    })


@login_required
def conversation_detail(request, slug, pk):
    corpus = _corpus(request, slug)
    conversation = get_object_or_404(corpus.conversations.select_related("corpus"), pk=pk)
    shown = browsing.conversation_shown(conversation)
    shown["persona"] = {k: browsing.shown_value(v) for k, v in shown["persona"].items()}
    shown["settings"] = {k: browsing.shown_value(v) for k, v in shown["settings"].items()}
    return render(request, "studies/conversation_detail.html", {"corpus": corpus, "conversation": shown})

"""The dialogue import page: an upload streamed to disk under a size limit, read all or nothing (small files at once, large ones by a worker)."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from studies.corpora import selectors as corpus_selectors
from studies.corpora import services as corpus_imports
from studies.corpora.forms import ImportForm
from studies.corpora.importing.records import ImportFailed, detected_text, missing_scores_text
from studies.corpora.importing.uploads import SizeLimitUploadHandler

MAX_WARNINGS = 20


@login_required
@csrf_exempt  # CSRF is checked below, once the size-limit handler is in place (Django docs, upload handlers)
def dialogues_import(request):
    limit = SizeLimitUploadHandler(request)
    request.upload_handlers.insert(0, limit)
    return _dialogues_import(request, limit)


@csrf_protect
def _dialogues_import(request, limit: SizeLimitUploadHandler):
    form = ImportForm(request.POST or None, request.FILES or None)
    problems: list[str] = []
    if limit.exceeded:
        problems = [limit.message()]
    elif request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            summary = corpus_imports.dialogues_import(
                stream=upload.file, source_name=upload.name, source_format=form.cleaned_data["format"],
                corpus_slug=form.cleaned_data["corpus"] or None, owner=request.user,
                systems=[s.strip() for s in form.cleaned_data["systems"].split(",") if s.strip()],
                judged_speaker=form.cleaned_data["judged_speaker"],
            )
        except ImportFailed as failure:
            problems = [str(p) for p in failure.problems]
            if failure.detected:
                problems.insert(0, detected_text(failure))
        else:
            detected = f"Detected format: {summary.format_name}. " if form.cleaned_data["format"] == "auto" else ""
            messages.success(request, (
                f"{detected}Imported {summary.conversations} conversations and {summary.responses} responses "
                f"into corpus {summary.corpus.slug}."
                + (f" Human judgments became study {summary.benchmark_study.slug} ({summary.ratings} ratings)."
                   if summary.benchmark_study else "")
                + (f" The pairs to judge became the draft ACUTE-Eval study {summary.acute_study.slug}."
                   if summary.acute_study else "")
                + (" " + missing_scores_text(summary.missing_scores, summary.unit) if summary.missing_scores else "")))
            for warning in summary.warnings[:MAX_WARNINGS]:
                messages.warning(request, f"Warning: {warning}")
            if len(summary.warnings) > MAX_WARNINGS:
                messages.warning(request, f"… and {len(summary.warnings) - MAX_WARNINGS} more warnings of the same kind.")
            return redirect("studies:corpus_detail", slug=summary.corpus.slug)
    corpora = corpus_selectors.item_corpora_visible_to(request.user)[:50]
    return render(request, "studies/import.html", {"form": form, "problems": problems, "corpora": corpora})

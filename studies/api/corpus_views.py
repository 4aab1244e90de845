"""Researcher API for what studies are built from: corpora, systems and background imports,
listed and read. Visibility is the import page's (``studies.corpora.listing``): your own corpora and the
shared ones nobody owns; another researcher's corpus is a 404 and never listed, their systems' descriptions
never shown, their import jobs never listed. Lists take the one pagination and refuse unknown filters."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.settings import api_settings

from studies.api.base import ApiView
from studies.api.inputs import PAGE_PARAMETERS, choice_param, paginate, query_params_checked
from studies.api.views import DialoguesImportApi
from studies.corpora import listing
from studies.corpora.selectors import corpus_systems
from studies.models import ImportJob


class CorpusOutputSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    title = serializers.CharField()
    source_format = serializers.CharField()
    source_name = serializers.CharField()
    owner = serializers.CharField(source="owner.username", allow_null=True, default=None,
                                  help_text="null: shared with everyone (the demo, an imported benchmark)")
    created_at = serializers.DateTimeField()
    conversations = serializers.IntegerField(source="conversations_count")
    responses = serializers.IntegerField(source="responses_count")


class SystemOutputSerializer(serializers.Serializer):
    name = serializers.CharField()
    responses = serializers.IntegerField(source="responses_count", help_text="in the corpora listed")
    description = serializers.SerializerMethodField(help_text="your own description of it, else Concord's")
    is_human = serializers.SerializerMethodField()

    def get_description(self, system) -> str:
        return system.own_description if system.own_description is not None else system.description

    def get_is_human(self, system) -> bool:
        return bool(system.own_is_human if system.own_is_human is not None else system.is_human)


class ImportJobOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=ImportJob.Status.choices)
    source_name = serializers.CharField()
    source_format = serializers.CharField()
    corpus = serializers.CharField(source="corpus_slug", help_text="the corpus it imports into")
    message = serializers.CharField()
    counts = serializers.DictField(help_text="a finished import's summary: counts, and the corpus, format (format_name), "
                                             "systems created, warnings by line, a study made from the file")
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


def _corpus(request, slug: str):
    return get_object_or_404(listing.corpora_listed(request.user), slug=slug)


class CorpusListApi(ApiView):
    """Your corpora and the shared ones, newest first; ``source_format`` filters by the format imported."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(responses=CorpusOutputSerializer(many=True), operation_id="corpus_list",
                   parameters=[OpenApiParameter("source_format", str, description="e.g. jsonl, csv, dailydialog_pp")])
    def get(self, request):
        query_params_checked(request, {*PAGE_PARAMETERS, "source_format"})
        corpora = listing.corpora_listed(request.user)
        if wanted := request.query_params.get("source_format"):
            corpora = corpora.filter(source_format=wanted)
        return paginate(self, corpora, request, CorpusOutputSerializer)


class CorpusDetailApi(ApiView):
    class OutputSerializer(CorpusOutputSerializer):
        systems = inline_serializer("CorpusSystem", {"name": serializers.CharField(),
                                                     "responses": serializers.IntegerField()}, many=True)

    @extend_schema(responses=OutputSerializer, operation_id="corpus_read")
    def get(self, request, slug):
        corpus = _corpus(request, slug)
        corpus.systems = [{"name": name, "responses": n} for name, n in corpus_systems(corpus) if name]
        return Response(self.OutputSerializer(corpus).data)


class CorpusSystemListApi(ApiView):
    """The systems with responses in one corpus, by name."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(responses=SystemOutputSerializer(many=True), operation_id="corpus_system_list")
    def get(self, request, slug):
        corpus = _corpus(request, slug)
        query_params_checked(request, PAGE_PARAMETERS)
        systems = listing.systems_listed(request.user, listing.corpora_listed(request.user).filter(pk=corpus.pk))
        return paginate(self, systems, request, SystemOutputSerializer)


class SystemListApi(ApiView):
    """The systems with responses in the corpora you can see (``corpus``: in one of them), by name."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(responses=SystemOutputSerializer(many=True), operation_id="system_list",
                   parameters=[OpenApiParameter("corpus", str, description="a corpus's slug")])
    def get(self, request):
        query_params_checked(request, {*PAGE_PARAMETERS, "corpus"})
        corpora = None
        if slug := request.query_params.get("corpus"):
            corpora = listing.corpora_listed(request.user).filter(slug=slug)
            if not corpora.exists():
                raise ValidationError({"corpus": [f"no corpus you can see has the slug {slug[:80]!r}"]})
        return paginate(self, listing.systems_listed(request.user, corpora), request, SystemOutputSerializer)


class ImportsApi(DialoguesImportApi):
    """Upload a dialogue file (POST): synchronous by default (all or nothing: 400 lists the problems by line
    and field); ``run_in_background`` queues a worker job and answers 202 with its id. GET lists your
    imports (synchronous ones as done, background ones as they run), newest first, filtered by ``status`` and ``corpus`` (the slug imported into)."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(responses=ImportJobOutputSerializer(many=True), operation_id="import_list",
                   description="Your imports, newest first: background ones (run_in_background) as they run, "
                                               "synchronous ones as done.",
                   parameters=[OpenApiParameter("status", str, enum=[v for v, _ in ImportJob.Status.choices]),
                               OpenApiParameter("corpus", str, description="the slug of the corpus imported into")])
    def get(self, request):
        query_params_checked(request, {*PAGE_PARAMETERS, "status", "corpus"})
        jobs = listing.import_jobs_listed(request.user)
        if wanted := choice_param(request, "status", [v for v, _ in ImportJob.Status.choices]):
            jobs = jobs.filter(status=wanted)
        if corpus := request.query_params.get("corpus"):
            jobs = jobs.filter(corpus_slug=corpus)
        return paginate(self, jobs, request, ImportJobOutputSerializer)

"""Researcher API resources with GET/PATCH/DELETE on their own path, beside the older action
routes they replace (``POST …/delete/``, ``…/revoke/``, ``…/settings/``, ``…/collaborators/remove/``),
which keep working:

- ``/experiments/<slug>/``: read, change (title, description), delete (every condition a draft no
  rater started; else 409; the owner only, a collaborator gets 403);
- ``/studies/<slug>/``: read, change (``editing.study_update``, as ``…/settings/``), delete (a draft no
  rater started, else 409);
- ``/studies/<slug>/invites/<id>/``: read, revoke (DELETE: the link stops working, its place is freed);
- ``/studies/<slug>/checks/<id>/``: remove a check item (drafts);
- ``/experiments/<slug>/collaborators/<user>/``: take an account's access away (the owner).

Visibility is the rest of the API's: another researcher's object is a 404, and nothing changes."""
from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from studies import access
from studies.api.base import ApiView, django_errors
from studies.api.check_views import CheckDeleteApi
from studies.api.inputs import StrictInput
from studies.api.serializers import InviteOutputSerializer
from studies.api.views import ExperimentListApi, StudyDetailApi, _visible_study
from studies.api.workflow_views import StudySettingsApi
from studies.authoring import editing, experiments
from studies.errors import StudyStateError
from studies.rating import invites


def _visible_experiment(request, slug: str):
    return get_object_or_404(access.experiments_visible_to(request.user).select_related("owner")
                             .prefetch_related("studies", "collaborators"), slug=slug)


class ExperimentDetailApi(ApiView):
    """An experiment of yours (or shared with you): its conditions, owner and collaborators."""

    class InputSerializer(StrictInput):
        title = serializers.CharField(max_length=experiments.TITLE_MAX, required=False)
        description = serializers.CharField(required=False, allow_blank=True)

    class OutputSerializer(ExperimentListApi.OutputSerializer):
        owner = serializers.CharField(source="owner.username", allow_null=True, default=None)
        collaborators = serializers.SerializerMethodField()
        created_at = serializers.DateTimeField()

        def get_collaborators(self, experiment) -> list[str]:
            return sorted(user.get_username() for user in experiment.collaborators.all())

    @extend_schema(responses=OutputSerializer, operation_id="experiment_read")
    def get(self, request, slug):
        return Response(self.OutputSerializer(_visible_experiment(request, slug)).data)

    @extend_schema(request=InputSerializer, responses=OutputSerializer, operation_id="experiment_update")
    def patch(self, request, slug):
        experiment = _visible_experiment(request, slug)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        experiments.experiment_update(experiment=experiment, values=data.validated_data)
        return Response(self.OutputSerializer(_visible_experiment(request, slug)).data)

    @extend_schema(request=None, responses={204: None}, operation_id="experiment_delete")
    def delete(self, request, slug):
        experiments.experiment_delete(experiment=_visible_experiment(request, slug), by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class StudyApi(StudyDetailApi):
    """A study: read it, change any of its settings (only the fields sent; as ``…/settings/``: the
    design, its configuration, the criteria and the platform only while it is a draft no rater has
    started), or delete it (a draft no rater has started; 409 otherwise, nothing deleted)."""

    @extend_schema(request=StudySettingsApi.InputSerializer, responses=StudySettingsApi.OutputSerializer,
                   operation_id="study_update")
    def patch(self, request, slug):
        return StudySettingsApi.patch(StudySettingsApi(), request, slug)

    @extend_schema(request=None, responses={204: None}, operation_id="study_destroy")
    def delete(self, request, slug):
        editing.study_delete(study=_visible_study(request, slug))
        return Response(status=status.HTTP_204_NO_CONTENT)


class InviteDetailApi(ApiView):
    """One invitation: read it, or revoke it (DELETE: the link stops working now and the place its rater
    holds is freed; submitted work is kept, and the invitation stays listed as revoked)."""

    @extend_schema(responses=InviteOutputSerializer, operation_id="invite_read")
    def get(self, request, slug, pk):
        return Response(InviteOutputSerializer(get_object_or_404(_visible_study(request, slug).invites, pk=pk)).data)

    @extend_schema(request=None, responses={204: None}, operation_id="invite_destroy")
    def delete(self, request, slug, pk):
        invites.invite_revoke(invite=get_object_or_404(_visible_study(request, slug).invites, pk=pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class CheckDetailApi(ApiView):
    """Remove a check item (draft studies; 409 otherwise)."""

    @extend_schema(request=None, responses={204: None}, operation_id="study_check_destroy")
    def delete(self, request, slug, pk):
        return CheckDeleteApi.post(CheckDeleteApi(), request, slug, pk)


class CollaboratorDetailApi(ApiView):
    """Take an account's access to the experiment away (its owner or staff; idempotent)."""

    @extend_schema(request=None, responses={204: None}, operation_id="experiment_collaborator_destroy")
    def delete(self, request, slug, user):
        experiment = _visible_experiment(request, slug)
        try:
            editing.experiment_collaborator_remove(experiment=experiment, by=request.user, identifier=user)
        except StudyStateError as error:
            raise ValidationError({"user": [str(error)]}) from None
        except DjangoValidationError as error:
            raise django_errors(error) from None
        return Response(status=status.HTTP_204_NO_CONTENT)

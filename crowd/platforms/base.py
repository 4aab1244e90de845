"""The one protocol every crowd platform implements (``CrowdPlatform``), with what the platforms
share: settings cleaned by kind, defaults filled from the study, the checks made before anything is
sent, the sync summary, and the mirroring of platform decisions onto Concord's assignments.

A platform module (``mturk.py``, ``prolific.py``) subclasses ``CrowdPlatform``, declares its settings
and capabilities, and implements the calls; the registry (``crowd.platforms``) maps a publication's
``platform`` to its object. The concern modules (``crowd.publishing``, ``crowd.sync``,
``crowd.reviews``, ``crowd.bonuses``, ``crowd.workers``) ask the platform object and never compare a
publication's platform to a specific one.

Order of work, so that a platform error leaves Concord's state unchanged: check locally (refuse,
sending nothing), call the platform, then record what the platform accepted.
"""
from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, ClassVar

from django.core.exceptions import ValidationError

from crowd import conf, costs
from crowd.errors import PublishRefused
from crowd.models import Bonus, Publication, WorkerAssignment
from crowd.scope import linked_studies, places_needed
from studies.authoring import planning
from studies.models import Assignment, Study
from studies.rating import allocation, review

DEFAULT_TITLE = "Rate the replies of chatbots"
DESCRIPTION = "Read short conversations and rate the replies of dialogue systems."
TRUE_WORDS = ("1", "true", "yes", "on")


@dataclass
class SyncSummary:
    seen: int = 0
    linked: int = 0
    abandoned: int = 0
    granted: int = 0
    problems: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        text = (f"{self.seen} platform assignment(s) seen, {self.linked} matched to Concord, "
                f"{self.abandoned} abandoned, {self.granted} qualification(s) granted")
        return text + (f"; problems: {'; '.join(self.problems)}" if self.problems else "")


def record_error(publication: Publication, error: Exception) -> None:
    Publication.objects.filter(pk=publication.pk).update(last_error=str(error)[:2000])


def mirror_review(assignment: Assignment | None, state: str, feedback: str, platform: str) -> None:
    """A decision taken on the platform itself (MTurk's auto-approval, a review in Prolific's web app)
    is mirrored onto Concord's submitted assignment, so both say the same."""
    if assignment is None or assignment.status != Assignment.Status.SUBMITTED:
        return
    if state == WorkerAssignment.State.APPROVED:
        review.assignment_approve(assignment=assignment)
    elif state == WorkerAssignment.State.REJECTED:
        review.assignment_reject(assignment=assignment, reason=feedback or f"rejected on {platform}")


def simulated_id(*parts: object, length: int) -> str:
    """A reproducible hexadecimal id for a simulated rater (``crowd.simulation``): the same parts give
    the same id, so a seeded run can be replayed."""
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:length]


def _typed(kind: str, value: Any) -> Any:
    """One setting converted by its kind; ValueError (or TypeError, InvalidOperation) says what is wrong.
    money: an amount to the cent; rate: a non-negative decimal; count: a whole number above 0;
    count0: a whole number from 0; switch: a check box; list: comma-separated words; json: as given."""
    if kind in ("money", "rate"):
        amount = Decimal(str(value))
        if not amount.is_finite() or amount < 0:
            raise ValueError("must be a non-negative amount")
        return str(costs.money(amount)) if kind == "money" else str(amount)
    if kind in ("count", "count0"):
        number = int(value)
        if number < 0 or (number == 0 and kind == "count"):
            raise ValueError("must be a positive whole number")
        return number
    if kind == "switch":
        return value if isinstance(value, bool) else str(value).lower() in TRUE_WORDS
    if kind == "list":
        return [str(v).strip() for v in (value.split(",") if isinstance(value, str) else value) if str(v).strip()]
    if kind == "json":
        return value
    return str(value).strip()


class CrowdPlatform(ABC):
    """What Concord does on one crowd platform. Class attributes declare the platform; methods
    marked abstract are its calls; the rest is shared and asks the hooks."""

    key: ClassVar[str]  # the ``Platform`` value stored on publications
    label: ClassVar[str]
    has_sandbox: ClassVar[bool] = False
    # name -> kind (see ``_typed``): every setting a publication on this platform may hold
    setting_kinds: ClassVar[Mapping[str, str]]
    # (name, label) of the settings the Crowd page offers, in its order
    setting_fields: ClassVar[Sequence[tuple[str, str]]]
    reward_setting: ClassVar[str]  # the setting that holds the reward
    reward_unit: ClassVar[Decimal] = Decimal(1)  # reward_setting / reward_unit = the study's reward
    external_label: ClassVar[str]  # what the publication's external id is on the platform
    can_draft: ClassVar[bool] = False  # created on the platform first, published later
    has_balance: ClassVar[bool] = False
    messages_workers: ClassVar[bool] = False
    transitions: ClassVar[Mapping[str, str]] = {}  # study actions -> Publication.Status
    rejection_categories: ClassVar[Sequence[str]] = ()

    # --- settings -------------------------------------------------------------------------------

    @property
    def setting_keys(self) -> frozenset[str]:
        return frozenset(self.setting_kinds)

    @abstractmethod
    def default_settings(self, publication: Publication, *, places: int, reward: Decimal,
                         minutes: float | None) -> dict[str, Any]:
        """The platform's defaults for what the researcher has not set."""

    def check_setting(self, key: str, value: Any) -> Any:
        """A platform's own limits on one typed setting (raise ValueError); returns the value kept."""
        return value

    def effective_settings(self, publication: Publication) -> dict[str, Any]:
        """The publication's settings with defaults filled in (a researcher sets only what differs).
        With the experiment link, places default to the sum over the experiment's open conditions."""
        study = publication.study
        places = sum(places_needed(s) for s in linked_studies(publication))
        # The reward and the expected minutes are the study's (studies.authoring.planning: one source of truth); a
        # publication keeps its own reward only once sent (the record of what the platform was told).
        reward = study.reward if study.reward is not None else Decimal("0")
        minutes = planning.pay_plan(study)["minutes"]
        # Not the study's title: that names the condition, which workers must not see.
        defaults = {"title": DEFAULT_TITLE, "description": DESCRIPTION, "planned_bonus_total": "0",
                    "experiment_link": False,
                    **self.default_settings(publication, places=places, reward=reward, minutes=minutes)}
        return {**defaults, **{k: v for k, v in publication.settings.items() if v not in (None, "")}}

    def clean_settings(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Checked, typed settings; ValidationError names every bad field."""
        errors: dict[str, str] = {}
        cleaned: dict[str, Any] = {}
        for key, value in values.items():
            if key not in self.setting_kinds:
                errors[key] = f"not a {self.key} setting (known: {', '.join(sorted(self.setting_kinds))})"
                continue
            if value in (None, ""):
                continue
            try:
                cleaned[key] = self.check_setting(key, _typed(self.setting_kinds[key], value))
            except (TypeError, ValueError, InvalidOperation) as error:
                readable = not isinstance(error, InvalidOperation) and "invalid literal" not in str(error)
                errors[key] = str(error) if readable and str(error) else "not a valid number"
        if errors:
            raise ValidationError(errors)
        return cleaned

    def reward_from(self, cleaned: dict[str, Any]) -> Decimal | None:
        """Take the reward out of cleaned settings (it is the study's), in the study's currency units."""
        value = cleaned.pop(self.reward_setting, None)
        return None if value is None else Decimal(str(value)) / self.reward_unit

    @abstractmethod
    def estimate(self, settings: Mapping[str, Any]) -> costs.Estimate:
        """What the publication will cost, from its effective settings."""

    # --- publishing -----------------------------------------------------------------------------

    def publish_problems(self, publication: Publication, *, confirm_production: bool) -> list[str]:
        """Why this publication cannot be sent now (empty when it can). Checked before any call."""
        study, s = publication.study, self.effective_settings(publication)
        problems = []
        if study.status != Study.Status.PUBLISHED:
            problems.append(f"the study is {study.status}: publish it in Concord first" if study.status == Study.Status.DRAFT
                            else "the study is closed")
        if not study.items.exists():
            problems.append("the study has no items")
        if publication.status != Publication.Status.DRAFT and not (
                self.can_draft and publication.status == Publication.Status.UNPUBLISHED):
            problems.append(f"it is already on {publication.get_platform_display()} ({publication.get_status_display()})")
        base = conf.public_base_url()
        if not base:
            problems.append("CONCORD_PUBLIC_URL is not set (the address workers open)")
        elif not base.startswith("https://"):
            problems.append("CONCORD_PUBLIC_URL must be an https:// address (both platforms open the task over https)")
        if s["experiment_link"]:
            problems.extend(self._experiment_link_problems(publication, s))
        return problems + self.platform_problems(publication, s, confirm_production=confirm_production)

    @abstractmethod
    def platform_problems(self, publication: Publication, s: Mapping[str, Any], *,
                          confirm_production: bool) -> list[str]:
        """The platform's own reasons to refuse (no reward, no confirmation for real money, ...)."""

    def experiment_link_problems(self, conditions: Sequence[Study], s: Mapping[str, Any]) -> list[str]:
        """The platform's reasons why one publication cannot carry every condition."""
        return []

    def _experiment_link_problems(self, publication: Publication, s: Mapping[str, Any]) -> list[str]:
        """Why the experiment link cannot carry this publication: conditions on other platforms, the
        platform's own reasons, or another condition already published with the experiment link."""
        conditions = linked_studies(publication)
        problems = []
        if problem := allocation.experiment_platform_problem(conditions):
            problems.append(problem)
        elif conditions[0].platform != publication.platform:
            problems.append(f"the experiment's conditions take raters from {conditions[0].get_platform_display()}")
        problems.extend(self.experiment_link_problems(conditions, s))
        twin = Publication.objects.filter(study__experiment_id=publication.study.experiment_id,
                                          platform=publication.platform, sandbox=publication.sandbox,
                                          settings__experiment_link=True) \
            .exclude(pk=publication.pk).exclude(status=Publication.Status.DRAFT).select_related("study").first()
        if twin is not None:
            problems.append(f"the experiment link is already published through {twin.study.slug}'s publication")
        return problems

    def refuse_unless_publishable(self, publication: Publication, confirm_production: bool) -> None:
        problems = self.publish_problems(publication, confirm_production=confirm_production)
        if problems:
            raise PublishRefused("cannot publish: " + "; ".join(problems) + " (nothing was sent)")

    @abstractmethod
    def publish(self, *, publication: Publication, confirm_production: bool = False, draft_only: bool = False,
                client: Any = None) -> Publication:
        """Send the publication (``draft_only``: create it on a platform that ``can_draft``, unpublished)."""

    @abstractmethod
    def published_summary(self, publication: Publication) -> str:
        """One line on what is now on the platform (lower case; callers capitalise)."""

    def balance(self, *, publication: Publication, client: Any = None) -> Decimal:
        raise ValidationError({"publication": f"{self.label} has no account balance that Concord can read"})

    # --- sync and review ------------------------------------------------------------------------

    @abstractmethod
    def sync(self, *, publication: Publication, client: Any = None) -> SyncSummary:
        """Read the platform's view of every acceptance, record it, and reconcile Concord's assignments."""

    @abstractmethod
    def client(self, publication: Publication, client: Any = None) -> Any:
        """The given client, or one built from the environment for this publication."""

    @abstractmethod
    def rejection_problem(self, feedback: str, category: str) -> str:
        """Why a rejection with this feedback (and category) cannot be sent, or ""."""

    @abstractmethod
    def review(self, client: Any, record: WorkerAssignment, *, decision: str, feedback: str, category: str) -> None:
        """Approve or reject one acceptance on the platform (``decision``: approve or reject)."""

    # --- bonuses and workers --------------------------------------------------------------------

    def bonus_problems(self, publication: Publication, assignment: Assignment) -> dict[str, str]:
        """The platform's reasons why this assignment cannot get a bonus, by field."""
        return {}

    @abstractmethod
    def simulated_entry(self, run: str, index: int) -> tuple[str, dict[str, str]]:
        """(worker id, entry-link parameters) of simulated rater ``index`` of a run, in the formats
        the platform itself uses, so that the entry's identity checks treat them as real ones."""

    @abstractmethod
    def bonuses_send(self, rows: list[Bonus], client: Any = None) -> None:
        """Send these unsent bonuses of publications on this platform, recording each outcome."""

    def workers_notify(self, client: Any, worker_ids: Sequence[str], subject: str, message: str) -> list[dict]:
        raise ValidationError({"worker_ids": f"Concord cannot message {self.label} workers"})

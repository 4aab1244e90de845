"""The study data model: what is judged (corpora of conversations and system responses), how
(studies and their items), and by whom (raters, assignments, ratings).

Integrity lives in the database (unique and check constraints); rules that depend on a study's
design (value ranges, config shape) are checked in ``studies.services`` before anything is written.
"""
from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.db.models import F, Q


class Design(models.TextChoices):
    LIKERT = "likert", "Likert scale"
    RME = "rme", "Magnitude estimation, fixed reference (RME)"
    BME = "bme", "Magnitude estimation, metric reference (BME)"
    BWS = "bws", "Best-worst scaling (ranking)"
    BWS_TUPLES = "bws_tuples", "Best-worst scaling, tuples of many items"
    PAIRWISE = "pairwise", "Pairwise comparison (A/B)"


MAGNITUDE_DESIGNS = (Design.RME, Design.BME)


class Unit(models.TextChoices):
    """What one rating judges: a response (the next turn, given the conversation so far) or a whole
    conversation (dialogue-level judgement, e.g. FED's dialogue level or DSTC9's interactive evaluation)."""

    RESPONSE = "response", "A response (the next turn)"
    DIALOGUE = "dialogue", "A whole dialogue"
    CHAT = "chat", "A chat the rater has with a system (studies.chat)"


def default_questionnaire() -> list[dict]:
    """The seed study's two questions (reports split by them) and two optional demographics."""
    return [
        {"name": "prior_rating_experience", "kind": "yes_no", "required": True,
         "question": "Have you taken part before in studies that rated the output of dialogue systems?"},
        {"name": "prior_agent_experience", "kind": "yes_no", "required": True,
         "question": "Have you talked with conversational agents (chatbots, voice assistants) before?"},
        {"name": "age_band", "kind": "choice", "required": False, "question": "Your age (optional)",
         "choices": ["18-24", "25-34", "35-44", "45-54", "55-64", "65 or over"]},
        {"name": "english_first_language", "kind": "yes_no", "required": False,
         "question": "Is English your first language? (optional)"},
    ]


def new_token() -> str:
    return secrets.token_urlsafe(24)


class Experiment(models.Model):
    """A between-subjects design: its studies are the conditions, and a worker takes part in one."""

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="owned_experiments", help_text="Empty: visible to staff only (e.g. a command-line import).",
    )
    collaborators = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="shared_experiments"
    )
    is_benchmark = models.BooleanField(
        default=False, help_text="Imported human judgments (GRADE, FED): read-only, already complete."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "slug"]

    def __str__(self) -> str:
        return self.title


class Corpus(models.Model):
    """One import of conversations and responses; studies draw their items from it."""

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    source_format = models.CharField(max_length=20)
    source_name = models.CharField(max_length=300, blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "slug"]
        verbose_name_plural = "corpora"

    def __str__(self) -> str:
        return self.slug


class System(models.Model):
    """A dialogue system (or the human reference) whose responses are judged."""

    name = models.SlugField(max_length=80, unique=True)
    description = models.TextField(blank=True)
    is_human = models.BooleanField(default=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Conversation(models.Model):
    """A dialogue context: ``turns`` is a JSON list of {"speaker": str, "text": str}."""

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="conversations")
    external_id = models.CharField(max_length=120)
    turns = models.JSONField()
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["corpus", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["corpus", "external_id"], name="conversation_unique_external_id"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.corpus.slug}/{self.external_id}"


class Response(models.Model):
    """A candidate next turn for a conversation, produced by a system (or the human reference).

    ``position`` numbers several responses of one system to one conversation (DailyDialog++ has
    five per quality level)."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="responses")
    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="responses")
    position = models.PositiveSmallIntegerField(default=0)
    text = models.TextField()
    is_reference = models.BooleanField(default=False)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["conversation", "system", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "system", "position"], name="response_unique_per_system"
            ),
            models.CheckConstraint(condition=~Q(text=""), name="response_text_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.system.name}: {self.text[:60]}"


class Study(models.Model):
    """One condition of an experiment: a design, its configuration, criteria and items."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        PUBLISHED = "published", "Published"
        CLOSED = "closed", "Closed"

    class Platform(models.TextChoices):
        INVITE = "invite", "Invite link"
        MTURK = "mturk", "Amazon Mechanical Turk"
        PROLIFIC = "prolific", "Prolific"
        BENCHMARK = "benchmark", "Imported benchmark"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="studies")
    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    design = models.CharField(max_length=10, choices=Design.choices)
    unit = models.CharField(
        max_length=10, choices=Unit.choices, default=Unit.RESPONSE,
        help_text="The unit of judgement: a response to a conversation, or the whole conversation.",
    )
    design_config = models.JSONField(default=dict, blank=True)
    unit_config = models.JSONField(default=dict, blank=True,
                                   help_text="The unit's settings (a chat's turns, message length, rate limit).")
    raters_per_item = models.PositiveIntegerField(default=40)
    items_per_assignment = models.PositiveIntegerField(default=50)
    instructions = models.TextField(blank=True, help_text="Markdown shown to raters before the items.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    platform = models.CharField(max_length=10, choices=Platform.choices, default=Platform.INVITE)
    platform_config = models.JSONField(
        default=dict, blank=True,
        help_text="completion_url (Prolific), time_limit_minutes, mturk sandbox flag, ...",
    )
    questionnaire = models.JSONField(default=default_questionnaire, blank=True)
    live_config = models.JSONField(default=dict, blank=True,
                                   help_text="live reliability: target, form, close_when_reached")
    checks_config = models.JSONField(
        default=dict, blank=True,
        help_text="attention checks: per_assignment, positions (1-based; empty = random), min_pass_rate",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    # The researcher's workflow (studies.editing, studies.planning): consent text, pay and pause.
    consent_text = models.TextField(blank=True, help_text="Markdown raters agree to before the first item.")
    reward = models.DecimalField(
        max_digits=8, decimal_places=2, null=True, blank=True,
        help_text="Pay per assignment, in the platform's currency (USD on MTurk); crowd publications default to it.",
    )
    estimated_minutes = models.PositiveIntegerField(
        null=True, blank=True, help_text="Planned minutes per assignment (a pilot's median replaces it once there is one).",
    )
    paused_at = models.DateTimeField(null=True, blank=True, help_text="Set while paused: no new raters.")

    class Meta:
        ordering = ["experiment", "id"]
        verbose_name_plural = "studies"
        constraints = [
            models.CheckConstraint(condition=Q(raters_per_item__gte=1), name="study_raters_per_item_min"),
            models.CheckConstraint(
                condition=Q(items_per_assignment__gte=1), name="study_items_per_assignment_min"
            ),
            models.CheckConstraint(
                condition=Q(status="draft") | Q(published_at__isnull=False),
                name="study_published_has_date",
            ),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def is_magnitude(self) -> bool:
        return self.design in MAGNITUDE_DESIGNS

    @property
    def is_dialogue(self) -> bool:
        return self.unit == Unit.DIALOGUE


class Criterion(models.Model):
    """A quality the raters judge (readability, coherence, ...), with the question they see.

    ``scale_min``/``scale_max`` override the design's range (imported benchmarks use each
    quality's own scale, e.g. FED's 0-2 and 1-5)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="criteria")
    name = models.SlugField(max_length=60)
    question = models.CharField(max_length=300)
    help_text = models.TextField(blank=True)
    position = models.PositiveSmallIntegerField(default=0)
    scale_min = models.FloatField(null=True, blank=True)
    scale_max = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["study", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="criterion_unique_name"),
        ]

    def __str__(self) -> str:
        return self.name


class CheckKind(models.TextChoices):
    GOLD = "gold", "Gold item (known answer)"
    INSTRUCTED = "instructed", "Instructed response"


class StudyItem(models.Model):
    """One screen: a conversation, the responses to judge, and the anchor for magnitude estimation.

    In a dialogue-unit study (``Study.unit``) the conversation itself is judged: the item shows no
    responses, and a magnitude design's anchor is ``reference_conversation`` (a whole dialogue).

    A check item (``check_kind`` set) is shown like any other but its answer is known
    (``check_rules``, see ``studies.checks``): it scores the rater and never enters an analysis."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    # Empty for a best-worst tuple (studies.bws_tuples): its members come from different
    # conversations, each shown with its own context (StudyItemResponse.response.conversation).
    conversation = models.ForeignKey(Conversation, null=True, blank=True, on_delete=models.PROTECT,
                                     related_name="study_items")
    position = models.PositiveIntegerField()
    responses = models.ManyToManyField(Response, through="StudyItemResponse", related_name="study_items")
    reference_response = models.ForeignKey(
        Response, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    reference_value = models.FloatField(null=True, blank=True)
    reference_conversation = models.ForeignKey(
        Conversation, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        help_text="Dialogue-unit magnitude estimation: the anchor dialogue shown with the reference value.",
    )
    check_kind = models.CharField(max_length=10, choices=CheckKind.choices, blank=True, default="")
    check_rules = models.JSONField(default=list, blank=True,
                                   help_text="What a passing answer is (studies.checks); response ids resolved.")

    class Meta:
        ordering = ["study", "position"]
        constraints = [
            models.UniqueConstraint(fields=["study", "position"], name="study_item_unique_position"),
            models.CheckConstraint(
                condition=Q(reference_value__isnull=True) | Q(reference_value__gt=0),
                name="study_item_reference_value_positive",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.study.slug} #{self.position}"


class StudyItemResponse(models.Model):
    """A response shown on an item, in its canonical order (raters see a per-rater shuffle)."""

    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="item_responses")
    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["item", "position"]
        constraints = [
            models.UniqueConstraint(fields=["item", "response"], name="item_response_unique"),
            models.UniqueConstraint(fields=["item", "position"], name="item_response_unique_position"),
        ]

    def __str__(self) -> str:
        return f"item {self.item_id} shows response {self.response_id}"


class StudyItemConversation(models.Model):
    """A dialogue shown on a dialogue-unit BWS item, in canonical order (raters see a per-rater
    shuffle): such an item ranks several whole dialogues. ``StudyItem.conversation`` is the first."""

    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="item_conversations")
    conversation = models.ForeignKey(Conversation, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["item", "position"]
        constraints = [
            models.UniqueConstraint(fields=["item", "conversation"], name="item_conversation_unique"),
            models.UniqueConstraint(fields=["item", "position"], name="item_conversation_unique_position"),
        ]

    def __str__(self) -> str:
        return f"item {self.item_id} shows conversation {self.conversation_id}"


class Rater(models.Model):
    """A person on a platform. Questionnaire answers live here so reports can split by them."""

    platform = models.CharField(max_length=10, choices=Study.Platform.choices)
    external_id = models.CharField(max_length=120)
    blocked = models.BooleanField(default=False)
    prior_rating_experience = models.BooleanField(
        null=True, blank=True, help_text="Taken part before in studies rating dialogue-system output?"
    )
    prior_agent_experience = models.BooleanField(
        null=True, blank=True, help_text="Talked with conversational agents before?"
    )
    questionnaire = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["platform", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["platform", "external_id"], name="rater_unique_identity"),
        ]

    def __str__(self) -> str:
        return f"{self.platform}:{self.external_id}"


class Assignment(models.Model):
    """One rater's work on one study: the items in the order shown, timing, completion code."""

    class Status(models.TextChoices):
        STARTED = "started", "Started"
        SUBMITTED = "submitted", "Submitted"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        ABANDONED = "abandoned", "Abandoned"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="assignments")
    rater = models.ForeignKey(Rater, on_delete=models.PROTECT, related_name="assignments")
    experiment = models.ForeignKey(
        Experiment, on_delete=models.CASCADE, related_name="+", editable=False,
        help_text="Copied from the study so the database can enforce one condition per worker.",
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.STARTED)
    token = models.CharField(max_length=40, unique=True, default=new_token, editable=False,
                             help_text="The unguessable key in the rater's links.")
    seed = models.BigIntegerField()
    platform_data = models.JSONField(default=dict, blank=True)
    acceptance_id = models.CharField(
        max_length=120, blank=True, db_index=True,
        help_text="The platform's per-acceptance id (MTurk assignmentId, Prolific SESSION_ID): re-entry must present it.",
    )
    started_at = models.DateTimeField()
    consented_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    total_seconds = models.FloatField(null=True, blank=True)
    completion_code = models.CharField(max_length=40, blank=True)
    checks_shown = models.PositiveSmallIntegerField(null=True, blank=True,
                                                    help_text="Check items in the assignment (set at submit).")
    checks_passed = models.PositiveSmallIntegerField(null=True, blank=True)
    checks_failed = models.BooleanField(
        default=False, help_text="Pass rate below the study's min_pass_rate: flagged, suggested for rejection.")

    class Meta:
        ordering = ["study", "started_at"]
        constraints = [
            models.UniqueConstraint(fields=["experiment", "rater"], name="assignment_one_condition_per_rater"),
            models.UniqueConstraint(fields=["study", "acceptance_id"], condition=~Q(acceptance_id=""),
                                    name="assignment_unique_acceptance_id"),
            models.CheckConstraint(
                condition=Q(total_seconds__isnull=True) | Q(total_seconds__gte=0),
                name="assignment_total_seconds_non_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rater} on {self.study.slug}"

    @property
    def screened_out(self) -> bool:
        """Failed the study's attention checks (``studies.checks``), or screened out by hand
        (``studies.review.assignment_screen_out``)."""
        return bool(self.checks_failed) or bool((self.platform_data or {}).get("screened_out"))


class Invite(models.Model):
    """A single-use invitation to one study, stored so that the secret key alone cannot mint one.

    The first browser that opens the link claims it: it holds a random secret in a first-party
    cookie, and only its SHA-256 is kept here. That browser may resume; any other is refused."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="invites")
    token = models.CharField(max_length=40, unique=True, default=new_token, editable=False,
                             help_text="The unguessable key in the invitation link.")
    label = models.CharField(max_length=120, blank=True, help_text="Whom it is for (shown to researchers only).")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    claimed_at = models.DateTimeField(null=True, blank=True)
    browser_hash = models.CharField(max_length=64, blank=True, help_text="SHA-256 of the claiming browser's secret.")

    class Meta:
        ordering = ["study", "-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(claimed_at__isnull=True) | ~Q(browser_hash=""),
                                   name="invite_claimed_has_browser"),
        ]

    def __str__(self) -> str:
        return f"invite {self.pk} to {self.study.slug}"

    @property
    def rater_id_text(self) -> str:
        """The rater identity an invite stands for (the label stays with the researcher)."""
        return f"invite-{self.pk}"


class AssignmentItem(models.Model):
    """An item inside an assignment: its place in the rater's sequence and the response order shown."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="assignment_items")
    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="assignment_items")
    position = models.PositiveIntegerField()
    response_order = models.JSONField(help_text="Response ids in the order this rater sees them.")
    draft = models.JSONField(default=dict, blank=True, help_text="Autosaved answers not yet submitted.")
    started_at = models.DateTimeField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    active_seconds = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["assignment", "position"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "item"], name="assignment_item_unique"),
            models.UniqueConstraint(fields=["assignment", "position"], name="assignment_item_unique_position"),
        ]

    def __str__(self) -> str:
        return f"assignment {self.assignment_id} #{self.position}"


class Rating(models.Model):
    """One judgment: a value (Likert, magnitude) or a rank (BWS) of one target for a criterion.

    The target is a ``response`` in a response-unit study and the ``conversation`` itself in a
    dialogue-unit study (``Study.unit``): exactly one of the two is set (``rating_one_target``), so
    every existing reader of response ratings is unchanged and a dialogue rating cannot be mistaken
    for one of a response. Each target has its own unique key per assignment and criterion, so a
    double submit stores once either way (NULLs never collide in a unique constraint)."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="ratings")
    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="ratings")
    response = models.ForeignKey(Response, null=True, blank=True, on_delete=models.PROTECT, related_name="ratings")
    conversation = models.ForeignKey(Conversation, null=True, blank=True, on_delete=models.PROTECT,
                                     related_name="ratings", help_text="Set instead of response in dialogue-unit studies.")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="ratings")
    value = models.FloatField(null=True, blank=True)
    rank = models.PositiveSmallIntegerField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["assignment", "item", "criterion", "response"]
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "response", "criterion"], name="rating_unique_per_assignment"
            ),
            models.UniqueConstraint(
                fields=["assignment", "conversation", "criterion"], name="rating_unique_conversation_per_assignment"
            ),
            models.CheckConstraint(
                condition=Q(response__isnull=False, conversation__isnull=True)
                | Q(response__isnull=True, conversation__isnull=False),
                name="rating_one_target",
            ),
            models.CheckConstraint(
                condition=Q(value__isnull=False) | Q(rank__isnull=False), name="rating_has_value_or_rank"
            ),
            models.CheckConstraint(condition=Q(rank__isnull=True) | Q(rank__gte=1), name="rating_rank_positive"),
        ]
        indexes = [models.Index(fields=["item", "criterion"], name="rating_item_criterion")]

    def __str__(self) -> str:
        return f"{self.criterion.name}={self.value if self.value is not None else self.rank}"

    @property
    def target_id(self) -> int:
        """The rated response's id, or the rated conversation's in a dialogue-unit study."""
        return self.response_id if self.response_id is not None else self.conversation_id


class BestWorstChoice(models.Model):
    """One rater's best and worst pick among the members of one tuple (a ``bws_tuples`` item) for
    one criterion (Kiritchenko & Mohammad 2016): a dedicated row, not Rating rows, because one
    response is a member of several tuples (factor·k of them) and one rater may meet it in two of
    their tuples, which Rating's unique (assignment, response, criterion) would forbid. The members
    not picked are neither best nor worst (they count as appearances); see studies.bws_tuples."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="best_worst_choices")
    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="best_worst_choices")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="best_worst_choices")
    best = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    worst = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    seconds = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["assignment", "item", "criterion"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "item", "criterion"], name="best_worst_unique_per_tuple"),
            models.CheckConstraint(condition=~Q(best=F("worst")), name="best_worst_differ"),
        ]

    def __str__(self) -> str:
        return f"{self.criterion.name}: best {self.best_id}, worst {self.worst_id}"


class Comparison(models.Model):
    """One pairwise judgment (design ``pairwise``): which of the two responses shown is better for a
    criterion, or a tie. ``left``/``right`` are stored as shown (not derived from the slot) so that
    position bias can be measured from this table alone.

    A dedicated table rather than Rating rows: a choice is one fact about two responses (a Rating is a
    value of one response), it carries a free-text reason, and a Rating-based encoding would feed 0/1
    "scores" into the Likert/ICC machinery. Pairwise studies are of responses only (a dialogue-unit
    study refuses the design); comparing two whole dialogues would need nullable left/right conversation
    keys beside these, and studies.analysis.pairwise, which only sees system labels, would not change."""

    class Choice(models.TextChoices):
        LEFT = "left", "Left is better"
        RIGHT = "right", "Right is better"
        TIE = "tie", "Tie"

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="comparisons")
    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="comparisons")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="comparisons")
    left = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    right = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    choice = models.CharField(max_length=5, choices=Choice.choices)
    reason = models.TextField(blank=True)
    seconds = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["assignment", "item", "criterion"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "item", "criterion"], name="comparison_unique_per_assignment"),
            models.CheckConstraint(condition=~Q(left=F("right")), name="comparison_two_different_responses"),
            models.CheckConstraint(condition=Q(choice__in=["left", "right", "tie"]), name="comparison_choice_valid"),
        ]
        indexes = [models.Index(fields=["item", "criterion"], name="comparison_item_criterion")]

    def __str__(self) -> str:
        return f"{self.criterion.name}: {self.choice}"


class ImportJob(models.Model):
    """A dialogue import run by a worker (large uploads): status and outcome for the researcher."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    path = models.CharField(max_length=500)
    source_name = models.CharField(max_length=300)
    source_format = models.CharField(max_length=20, default="auto")
    corpus_slug = models.SlugField(max_length=80)
    systems = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    message = models.TextField(blank=True)
    counts = models.JSONField(default=dict, blank=True)
    corpus = models.ForeignKey(Corpus, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"import of {self.source_name} ({self.status})"


# The chat unit's tables live with it (studies.chat) and are models of this app.
from studies.chat.models import Chat, ChatTurn, StudyItemSystem, SystemEndpoint  # noqa: E402, F401

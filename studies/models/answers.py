"""The answers: ratings, best-worst picks and pairwise (A/B) choices."""
from __future__ import annotations

from typing import cast

from django.db import models
from django.db.models import F, Q

from studies.models.corpora import Conversation, Response
from studies.models.raters import Assignment
from studies.models.studies import Criterion, StudyItem


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
    # The answers of the other judgement kinds (studies.designs.kinds): one label (categorical), a set
    # of labels (multi-label; [] is "none of these"), free text; and the free-text reason of any kind.
    label = models.CharField(max_length=60, null=True, blank=True)
    labels = models.JSONField(null=True, blank=True)
    # Span annotation (kinds.spans): the marked spans, [{"start", "end", "label"}] as character offsets
    # [start, end) into the target's stored text ("turn" too in a dialogue); [] is "nothing to mark".
    spans = models.JSONField(null=True, blank=True)
    text = models.TextField(blank=True, default="")
    # Per-turn answers (kinds.per_turn): {turn index as text: a label or a list of labels}, one entry per
    # judged turn of the rated dialogue, keyed by the turn's index in ``Conversation.turns``.
    turns = models.JSONField(null=True, blank=True)
    rationale = models.TextField(blank=True, default="")
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
                condition=Q(value__isnull=False) | Q(rank__isnull=False) | Q(label__isnull=False)
                | Q(labels__isnull=False) | Q(spans__isnull=False) | Q(turns__isnull=False) | ~Q(text=""), name="rating_has_an_answer"
            ),
            models.CheckConstraint(condition=Q(rank__isnull=True) | Q(rank__gte=1), name="rating_rank_positive"),
        ]
        indexes = [models.Index(fields=["item", "criterion"], name="rating_item_criterion")]

    def __str__(self) -> str:
        given = next((v for v in (self.value, self.rank, self.label, self.labels, self.spans) if v is not None), self.text)
        return f"{self.criterion.name}={given}"

    @property
    def target_id(self) -> int:
        """The rated response's id, or the rated conversation's in a dialogue-unit study."""
        return self.response_id if self.response_id is not None else cast(int, self.conversation_id)  # rating_one_target


class BestWorstChoice(models.Model):
    """One rater's best and worst pick among the members of one tuple (a ``bws_tuples`` item) for
    one criterion (Kiritchenko & Mohammad 2016): a dedicated row, not Rating rows, because one
    response is a member of several tuples (factor·k of them) and one rater may meet it in two of
    their tuples, which Rating's unique (assignment, response, criterion) would forbid. The members
    not picked are neither best nor worst (they count as appearances); see studies.designs.bws_tuples."""

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
    "scores" into the Likert/ICC machinery. A pairwise study compares two responses (``left``/``right``);
    an ACUTE-Eval study (design ``acute``, Li, Weston and Roller 2019) compares two whole conversations
    (``left_conversation``/``right_conversation``) and names the speaker judged in each
    (``left_speaker``/``right_speaker``); exactly one of the two pairs is set. studies.analysis.pairwise
    sees only system labels, so both are analysed alike."""

    class Choice(models.TextChoices):
        LEFT = "left", "Left is better"
        RIGHT = "right", "Right is better"
        TIE = "tie", "Tie"

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="comparisons")
    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="comparisons")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="comparisons")
    left = models.ForeignKey(Response, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    right = models.ForeignKey(Response, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    left_conversation = models.ForeignKey(Conversation, null=True, blank=True, on_delete=models.PROTECT,
                                          related_name="+")
    right_conversation = models.ForeignKey(Conversation, null=True, blank=True, on_delete=models.PROTECT,
                                           related_name="+")
    left_speaker = models.CharField(max_length=100, blank=True, default="")
    right_speaker = models.CharField(max_length=100, blank=True, default="")
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
            models.CheckConstraint(condition=~Q(left_conversation=F("right_conversation")),
                                   name="comparison_two_different_conversations"),
            models.CheckConstraint(
                condition=Q(left__isnull=False, right__isnull=False, left_conversation__isnull=True,
                            right_conversation__isnull=True)
                | Q(left__isnull=True, right__isnull=True, left_conversation__isnull=False,
                    right_conversation__isnull=False),
                name="comparison_responses_or_conversations"),
            models.CheckConstraint(condition=Q(choice__in=["left", "right", "tie"]), name="comparison_choice_valid"),
        ]
        indexes = [models.Index(fields=["item", "criterion"], name="comparison_item_criterion")]

    def __str__(self) -> str:
        return f"{self.criterion.name}: {self.choice}"

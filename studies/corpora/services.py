"""Imports of conversations, responses and human scores into corpora (all or nothing), and import jobs run by a worker for large files."""
from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from studies import jobs
from studies.corpora.annotated_study import annotated_study_create
from studies.corpora.importing import files as import_files
from studies.corpora.importing.formats import system_key
from studies.corpora.importing.parsers import FORMAT_NAMES
from studies.corpora.importing.reading import text_problem, value_problem
from studies.corpora.importing.records import ImportFailed, ImportProblem, ParsedConversation, ParsedHeader
from studies.corpora.parlai_study import pairings_study_create
from studies.designs import design_for
from studies.models import (
    Assignment,
    AssignmentItem,
    Conversation,
    Corpus,
    Criterion,
    Design,
    Experiment,
    ImportJob,
    Rating,
    Response,
    Study,
    StudyItem,
    StudyItemResponse,
    System,
    SystemDescription,
    Unit,
)
from studies.rating.entry import rater_get_or_create
from studies.slugs import _create_with_slug

logger = logging.getLogger(__name__)


IMPORT_BATCH = 1000


# At most this many responses to one conversation in an import (DailyDialog++ has 15; a screen shows
# a handful): more is a malformed file, and Response.position is a small integer.
MAX_RESPONSES_PER_CONVERSATION = 1000


MAX_REPORTED_PROBLEMS = 20


@dataclass
class ImportSummary:
    corpus: Corpus
    format: str
    conversations: int = 0
    responses: int = 0
    systems_created: list[str] = field(default_factory=list)
    benchmark_study: Study | None = None
    ratings: int = 0
    missing_scores: dict[str, int] = field(default_factory=dict)
    unit: str = Unit.RESPONSE
    warnings: list[str] = field(default_factory=list)  # what was guessed (a speaker), by line
    acute_study: Study | None = None  # a ParlAI pairings file's draft ACUTE-Eval study (parlai_study)

    @property
    def format_name(self) -> str:
        return FORMAT_NAMES.get(self.format, self.format)

    def as_dict(self) -> dict[str, Any]:
        return {
            "format_name": self.format_name, "warnings": self.warnings,
            "acute_study": self.acute_study.slug if self.acute_study else None,
            "corpus": self.corpus.slug, "format": self.format, "conversations": self.conversations,
            "responses": self.responses, "systems_created": self.systems_created,
            "benchmark_study": self.benchmark_study.slug if self.benchmark_study else None,
            "ratings": self.ratings, "missing_scores": self.missing_scores, "unit": self.unit,
        }


def _corpus_name_taken(slug: str) -> ImportProblem:
    # Corpus names are global: say nothing of whose corpus holds it.
    return ImportProblem(None, "corpus", f"the corpus name {slug!r} is not available; choose another name")


def _size_of(stream: BinaryIO) -> int | None:
    try:
        position = stream.tell()
        stream.seek(0, 2)
        size = stream.tell()
        stream.seek(position)
        return size
    except (OSError, AttributeError):
        return None


def dialogues_import(*, stream: BinaryIO, source_name: str, source_format: str = "auto",
                     corpus_slug: str | None = None, owner=None, systems: Iterable[str] = (),
                     on_progress=None, more_files: Sequence[tuple[str, BinaryIO]] = (),
                     judged_speaker: str = "") -> ImportSummary:
    """Import conversations and responses from a binary stream, all or nothing.

    The file is parsed one record at a time and written in batches inside one transaction; any
    problem (malformed line, missing field, empty text, unknown system, duplicate id, non-UTF-8, too
    large) raises ImportFailed listing up to 20 problems by line and field, and nothing is kept.
    Systems must exist already, be declared by the file (Concord header; implied by the public
    formats) or be named in ``systems``. GRADE, FED and DSTC9 human scores also become a closed,
    read-only benchmark study (one rater per annotator position) whose unit is the file's: responses,
    or whole dialogues (FED dialogue level, DSTC9). ``more_files`` ((name, stream) pairs of the same
    format) go into the same corpus and benchmark study: several files of one evaluation. ParlAI files
    (``parlai_formats``) keep every speaker's name; ``judged_speaker`` names the speaker to judge wherever
    a conversation has it (else the file's); a pairings file also makes a draft ACUTE-Eval study of
    exactly its pairs (``parlai_study``)."""
    files = [(source_name, stream), *more_files]
    limit = settings.IMPORT_MAX_BYTES
    size = sum(_size_of(s) or 0 for _, s in files)
    if size > limit:
        what = "the files are" if len(files) > 1 else "the file is"
        raise ImportFailed([ImportProblem(None, "", f"{what} {size / 2**20:.1f} MiB; the import limit is "
                                                    f"{limit / 2**20:.0f} MiB (CONCORD_IMPORT_MAX_BYTES)")])
    detecting = source_format == "auto"
    source_format, format_problems = import_files.formats_problems(files, source_format)
    if format_problems:
        raise ImportFailed(format_problems)
    try:
        return _import(files, source_name, source_format, corpus_slug, owner, systems, on_progress, judged_speaker)
    except ImportFailed as failure:
        if detecting:  # the page, the command and the API say which format the file was read as
            failure.detected = FORMAT_NAMES.get(source_format, source_format)
        raise


def _import(files, source_name, source_format, corpus_slug, owner, systems, on_progress, judged_speaker) -> ImportSummary:
    slug = slugify(corpus_slug or source_name.rsplit("/", 1)[-1].rsplit(".", 1)[0])[:80]
    if not slug:
        raise ImportFailed([ImportProblem(None, "corpus", "give the corpus a name")])
    if Corpus.objects.filter(slug=slug).exists():
        raise ImportFailed([_corpus_name_taken(slug)])
    declared = {system_key(s) for s in systems}
    header = ParsedHeader(judged_speaker=(judged_speaker or "").strip())
    with transaction.atomic():
        try:
            with transaction.atomic():  # a savepoint: a concurrent import of the same name loses cleanly
                corpus = Corpus.objects.create(slug=slug, title=slug, source_format=source_format,
                                               source_name=source_name[-300:], owner=owner)
        except IntegrityError:
            raise ImportFailed([_corpus_name_taken(slug)]) from None
        summary = ImportSummary(corpus=corpus, format=source_format)
        writer = _CorpusWriter(corpus, header, declared, summary,
                               keep_scores=source_format in ("grade", "fed", "dstc9"))
        problems: list[ImportProblem] = []
        seen: dict[str, int] = {}
        batch: list[ParsedConversation] = []
        for record in import_files.parsed_records(files, source_format, header):
            if isinstance(record, ParsedConversation):
                if writer.merge(record):
                    continue  # another rating of a conversation already read (one rating per record)
                problem = writer.check(record, seen)
                record = problem or record
            if isinstance(record, ImportProblem):
                problems.append(record)
                if len(problems) >= MAX_REPORTED_PROBLEMS:
                    break
                continue
            if not problems:
                batch.append(record)
                if len(batch) >= IMPORT_BATCH:
                    writer.write(batch)
                    batch = []
                    if on_progress:
                        on_progress(summary.conversations)
        if not problems and not seen:
            problems.append(ImportProblem(None, "", "the file holds no conversations"))
        if problems:
            transaction.set_rollback(True)
            raise ImportFailed(problems)
        writer.write(batch)
        writer.describe_systems()
        summary.missing_scores = dict(header.missing_scores)
        summary.unit = header.unit
        summary.warnings = [str(w) for w in header.warnings]
        if source_format == "parlai-pairings" and any(not p.get("onboarding") for p in header.pairs):
            summary.acute_study = pairings_study_create(corpus=corpus, pairs=header.pairs, owner=owner)
        scored = [entry for entry in writer.scored if any(v is not None for s in entry[2].values() for v in s)]
        if header.benchmark and scored:
            summary.benchmark_study, summary.ratings = _benchmark_study_create(corpus, header, scored, owner)
        if header.annotated and writer.annotated:
            summary.benchmark_study, summary.ratings = annotated_study_create(
                corpus=corpus, annotated=writer.annotated, unit=header.unit, owner=owner)
    return summary


def _scores_extend(kept: dict[str, list[float | None]], extra: dict[str, list[float | None]]) -> None:
    """Append ``extra``'s annotator positions after ``kept``'s, padding with None so that position j
    is the same annotator in every quality."""
    width = max((len(v) for v in kept.values()), default=0)
    extra_width = max((len(v) for v in extra.values()), default=0)
    for name in kept.keys() | extra.keys():
        padded = kept.setdefault(name, [])
        padded += [None] * (width - len(padded))
        padded += extra.get(name) or [None] * extra_width


class _CorpusWriter:
    """Checks records against what the database and the file declare, and bulk-writes batches."""

    def __init__(self, corpus: Corpus, header: ParsedHeader, declared: set[str], summary: ImportSummary,
                 keep_scores: bool):
        self.corpus, self.header, self.declared, self.summary = corpus, header, declared, summary
        self.system_ids = dict(System.objects.values_list("name", "id"))
        self.keep_scores = keep_scores
        self.scored: list[tuple[int, int, dict[str, list[float | None]]]] = []  # conversation, response, scores
        self.rated: dict[Any, tuple[list, bytes]] = {}  # key -> (first record's responses, digest of its content)
        self.annotated: list[tuple[int, int | None, list[dict]]] = []  # named raters' answers per target

    @staticmethod
    def _digest(record: ParsedConversation) -> bytes:
        content = repr((record.turns, [(r.system, r.text) for r in record.responses]))
        return hashlib.blake2b(content.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def merge(self, record: ParsedConversation) -> bool:
        """Human-judgment files may give one rating per record: a record that repeats a conversation
        already read (same id, or for files without ids the same context) with the same responses adds
        its scores as further annotator positions of that conversation instead of being a duplicate
        (DSTC9: the k-th record of one dialogue is annotator k, also across the files of one import).
        The first record's score lists are extended in place (they are what ``write`` keeps)."""
        dialogue = not record.responses and self.header.unit == Unit.DIALOGUE
        if not self.keep_scores or not (dialogue or any(r.human_scores for r in record.responses)):
            return False
        digest = self._digest(record)
        key = ("content", digest) if record.id_generated else ("id", record.external_id)
        first = self.rated.get(key)
        if first is None:
            self.rated[key] = ([record] if dialogue else record.responses, digest)
            return False
        if first[1] != digest:
            return False  # a different conversation under the same id: check() reports the duplicate
        for kept, extra in zip(first[0], [record] if dialogue else record.responses, strict=True):
            _scores_extend(kept.human_scores, extra.human_scores)
        return True

    def check(self, record: ParsedConversation, seen: dict[str, int]) -> ImportProblem | None:
        """What the database could not store or would confuse, named by line and field, whatever the
        format: text with NUL or lone surrogates, ids longer than the column (two ids equal in their
        first 120 characters would collide), system names over 80 characters, too many responses."""
        line = record.line
        problem = self._storable(record)
        if problem is not None:
            return problem
        if record.external_id in seen:
            return ImportProblem(line, "id", f"duplicate conversation id {record.external_id!r} "
                                             f"(first on line {seen[record.external_id]})")
        seen[record.external_id] = line
        for response in record.responses:
            name = response.system
            if name not in self.system_ids and name not in self.header.systems and name not in self.declared:
                return ImportProblem(record.line, f"responses.{name}", (
                    f"unknown system {name!r}: declare it in the file's header \"systems\" or pass it as a "
                    "known system (--system / systems)"))
        return None

    @staticmethod
    def _storable(record: ParsedConversation) -> ImportProblem | None:
        line = record.line
        id_limit = Conversation._meta.get_field("external_id").max_length
        name_limit = System._meta.get_field("name").max_length
        if (message := text_problem(record.external_id)) is not None:
            return ImportProblem(line, "id", message)
        if len(record.external_id) > id_limit:
            return ImportProblem(line, "id", f"is {len(record.external_id)} characters long; ids may have at most "
                                             f"{id_limit}")
        for i, turn in enumerate(record.turns):
            for key in ("speaker", "text"):
                if (message := text_problem(turn[key])) is not None:
                    return ImportProblem(line, f"turns[{i}].{key}", message)
        if len(record.responses) > MAX_RESPONSES_PER_CONVERSATION:
            return ImportProblem(line, "responses", f"has {len(record.responses)} responses; one conversation may "
                                                    f"have at most {MAX_RESPONSES_PER_CONVERSATION}")
        for response in record.responses:
            field_name = f"responses.{response.system}"
            if len(response.system) > name_limit:
                return ImportProblem(line, f"responses.{response.system[:40]}…",
                                     f"the system name is {len(response.system)} characters long; at most {name_limit}")
            if (message := text_problem(response.system)) is not None:
                return ImportProblem(line, "system", message)
            if (message := text_problem(response.text)) is not None:
                return ImportProblem(line, field_name, message)
            if (problem := value_problem(response.metadata, f"{field_name}.metadata")) is not None:
                return ImportProblem(line, *problem)
        if (problem := value_problem(record.metadata, "metadata")) is not None:
            return ImportProblem(line, *problem)
        return None

    def _ensure_systems(self, names: set[str]) -> None:
        missing = sorted(names - set(self.system_ids))
        if not missing:
            return
        # The shared row holds the name only; the file's description is the importer's own (below).
        System.objects.bulk_create([System(name=n, is_human=n in self.header.human_systems) for n in missing],
                                   ignore_conflicts=True)
        self.system_ids.update(System.objects.filter(name__in=missing).values_list("name", "id"))
        self.summary.systems_created += missing

    def describe_systems(self) -> None:
        """The header's system descriptions (and which are human) as the corpus owner's own
        ``SystemDescription`` rows: set or replaced for this owner, never for another researcher."""
        owner = self.corpus.owner
        if owner is None:
            return
        for name, system_id in self.system_ids.items():
            described = name in self.header.systems and self.header.systems.get(name)
            if not described and name not in self.header.human_systems:
                continue
            SystemDescription.objects.update_or_create(
                system_id=system_id, owner=owner,
                defaults={"description": self.header.systems.get(name) or "",
                          "is_human": name in self.header.human_systems})

    def write(self, batch: list[ParsedConversation]) -> None:
        if not batch:
            return
        self._ensure_systems({r.system for c in batch for r in c.responses})
        conversations = Conversation.objects.bulk_create([
            Conversation(corpus=self.corpus, external_id=c.external_id, turns=c.turns, metadata=c.metadata)
            for c in batch
        ])
        pairs = [(conversation, parsed) for conversation, record in zip(conversations, batch, strict=True) for parsed in record.responses]
        responses = Response.objects.bulk_create([
            Response(conversation=conversation, system_id=self.system_ids[p.system], position=p.position,
                     text=p.text, is_reference=p.is_reference, metadata=p.metadata)
            for conversation, p in pairs
        ])
        if self.keep_scores:
            self.scored += [(c.pk, r.pk, p.human_scores) for (c, p), r in zip(pairs, responses, strict=True) if p.human_scores]
            # Dialogue-level judgments: the conversation itself is rated (no response). Kept even while
            # its scores are empty: a later record of the same dialogue (another file) extends them in place.
            if self.header.unit == Unit.DIALOGUE:
                self.scored += [(c.pk, None, record.human_scores)
                                for c, record in zip(conversations, batch, strict=True) if not record.responses]
        if self.header.annotated:
            self._annotations_keep(batch, conversations, pairs, responses)
        self.summary.conversations += len(conversations)
        self.summary.responses += len(responses)

    def _annotations_keep(self, batch, conversations, pairs, responses) -> None:
        """Each target's annotations: the conversation's own, or per response by its system."""
        ids = {(c.pk, p.system): r.pk for (c, p), r in zip(pairs, responses, strict=True)}
        for conversation, record in zip(conversations, batch, strict=True):
            by_target: dict[int | None, list[dict]] = {}
            for answer in record.annotations:
                target = None if answer["system"] is None else ids[(conversation.pk, answer["system"])]
                by_target.setdefault(target, []).append(answer)
            self.annotated += [(conversation.pk, target, answers) for target, answers in by_target.items()]


def _benchmark_study_create(corpus: Corpus, header: ParsedHeader, scored, owner) -> tuple[Study, int]:
    """A closed Likert study holding imported human judgments: one item per conversation, one rater
    per annotator position (annotator j of one item is not known to be annotator j of another).
    Its unit is the file's: a response (``scored`` holds (conversation, response, scores)) or the whole
    dialogue (response None: the ratings attach to the conversation)."""
    now = timezone.now()
    dialogue = header.unit == Unit.DIALOGUE
    experiment = _create_with_slug(
        Experiment, slug=None, text=corpus.slug, title=f"{corpus.slug} human judgments", owner=owner,
        is_benchmark=True,
        description=f"Imported from {corpus.source_name} ({corpus.source_format}). Each annotator position is "
                    "one rater; positions are not the same people across items.",
    )
    positions = max(len(s) for _, _, scores in scored for s in scores.values())
    points = int(min(11, max(2, max(high - low + 1 for low, high in header.scales.values()))))
    study = _create_with_slug(
        Study, slug=None, text=corpus.slug, experiment=experiment, title=f"{corpus.slug} (imported)",
        design=Design.LIKERT, design_config=design_for(Design.LIKERT).config_clean({"points": points}),
        unit=Unit.DIALOGUE if dialogue else Unit.RESPONSE,
        raters_per_item=positions, items_per_assignment=len(scored), status=Study.Status.CLOSED,
        platform=Study.Platform.BENCHMARK, published_at=now, closed_at=now,
        instructions="Imported human judgments (read-only benchmark).",
    )
    criteria = Criterion.objects.bulk_create([
        Criterion(study=study, name=name, question=f"{name.replace('-', ' ')} (as annotated in the source)",
                  position=i, scale_min=low, scale_max=high)
        for i, (name, (low, high)) in enumerate(header.scales.items())
    ])
    criterion_ids = {c.name: c.pk for c in criteria}
    items = StudyItem.objects.bulk_create(
        [StudyItem(study=study, conversation_id=cid, position=i) for i, (cid, _, _) in enumerate(scored)],
        batch_size=2000,
    )
    if not dialogue:
        StudyItemResponse.objects.bulk_create(
            [StudyItemResponse(item=item, response_id=rid, position=0)
             for item, (_, rid, _) in zip(items, scored, strict=True)],
            batch_size=2000,
        )
    raters = [rater_get_or_create(platform=Study.Platform.BENCHMARK, external_id=f"{corpus.slug}:annotator-{j + 1}")
              for j in range(positions)]
    assignments = Assignment.objects.bulk_create([
        Assignment(study=study, rater=rater, experiment=experiment, status=Assignment.Status.SUBMITTED, seed=0,
                   started_at=now, submitted_at=now)
        for rater in raters
    ])
    slots, ratings = [], []
    for item, (conversation_id, response_id, scores) in zip(items, scored, strict=True):
        target = {"conversation_id": conversation_id} if dialogue else {"response_id": response_id}
        for j, assignment in enumerate(assignments):
            given = [(name, s[j]) for name, s in scores.items() if j < len(s) and s[j] is not None]
            if not given:
                continue
            slots.append(AssignmentItem(assignment=assignment, item=item, position=item.position,
                                        response_order=[conversation_id if dialogue else response_id], answered_at=now))
            ratings += [Rating(assignment=assignment, item=item, criterion_id=criterion_ids[name], value=value, **target)
                        for name, value in given]
    AssignmentItem.objects.bulk_create(slots, batch_size=2000)
    Rating.objects.bulk_create(ratings, batch_size=2000)
    return study, len(ratings)


def import_recorded(*, owner, source_name: str, source_format: str, summary) -> ImportJob:
    """Record an import that ran synchronously (the upload answered with its summary) as a finished job, so
    that the list of imports shows every import, not only the background ones. No file is kept (``path`` empty)."""
    return ImportJob.objects.create(owner=owner, path="", source_name=source_name[:300], source_format=source_format,
                                    corpus_slug=summary.corpus.slug, corpus=summary.corpus,
                                    status=ImportJob.Status.DONE, counts=summary.as_dict(), finished_at=timezone.now())


def import_job_create(*, owner, path: str, source_name: str, source_format: str, corpus_slug: str,
                      systems: Sequence[str] = ()) -> ImportJob:
    job = ImportJob.objects.create(owner=owner, path=path, source_name=source_name, source_format=source_format,
                                   corpus_slug=corpus_slug, systems=list(systems))
    jobs.queue_after_commit("studies.tasks.import_job_run", job.pk)
    return job


def import_job_run(*, job: ImportJob, resume: bool = False) -> ImportJob:
    """Run a queued import; its outcome (counts or the problems) is recorded on the job row.

    Every outcome ends the job: done, failed with the problems, or failed with a message on an
    unexpected error (never left ``running``); the uploaded file is deleted either way. ``resume``
    (a task redelivered after its worker died) also takes a job left ``running``: the import is one
    transaction, so nothing of the dead attempt was kept."""
    claimable = [ImportJob.Status.QUEUED, ImportJob.Status.RUNNING] if resume else [ImportJob.Status.QUEUED]
    claimed = ImportJob.objects.filter(pk=job.pk, status__in=claimable).update(status=ImportJob.Status.RUNNING)
    job.refresh_from_db()
    if not claimed:
        return job
    try:
        with open(job.path, "rb") as stream:
            summary = dialogues_import(stream=stream, source_name=job.source_name, source_format=job.source_format,
                                       corpus_slug=job.corpus_slug, owner=job.owner, systems=job.systems)
        job.status, job.counts, job.corpus = ImportJob.Status.DONE, summary.as_dict(), summary.corpus
    except ImportFailed as failure:
        job.status, job.message = ImportJob.Status.FAILED, "\n".join(str(p) for p in failure.problems)
    except OSError as error:
        job.status, job.message = ImportJob.Status.FAILED, f"cannot read the uploaded file: {error.strerror}"
    except Exception as error:  # noqa: BLE001 - any other failure must still end the job with a message
        logger.exception("import job %s failed unexpectedly", job.pk)
        job.status = ImportJob.Status.FAILED
        job.message = (f"the import stopped on an unexpected error ({type(error).__name__}); nothing was kept. "
                       f"Tell the administrators the job number ({job.pk}).")
    finally:
        _upload_delete(job.path)
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "counts", "corpus", "message", "finished_at"])
    return job


def _upload_delete(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        logger.warning("could not delete the import upload %s", path)

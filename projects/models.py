"""Research projects and which papers they hold (a paper can be in many projects), and the
literature reviews whose results become projects."""

from __future__ import annotations

import secrets
import uuid

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower

from core.models import TimeStamped
from papers.models import Annotation, Paper


def feed_token_new() -> str:
    """A random token for a feed link (32 bytes from the OS's random source)."""
    return secrets.token_urlsafe(32)


class Project(TimeStamped):
    # A slug made from the name at creation; stays the same when the project is renamed,
    # so agents can keep referring to it. Tools accept the id or the name.
    id = models.CharField(primary_key=True, max_length=100)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    papers = models.ManyToManyField(
        Paper, through="ProjectPaper", related_name="projects", blank=True
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(Lower("name"), name="project_name_unique_ci"),
        ]

    def __str__(self) -> str:
        return self.name


class ProjectPaper(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="paper_links")
    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="project_links")
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "paper"], name="projectpaper_unique")
        ]
        indexes = [
            # list_project_papers: a project's papers, newest additions first.
            models.Index(fields=["project", "-added_at"], name="projectpaper_project_idx"),
            # the projects of a paper (detail record, collection scoping).
            models.Index(fields=["paper", "project"], name="projectpaper_paper_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.project_id}: {self.paper_id}"


# --- members and roles (projects/permissions.py, docs/AUTH.md) ------------------------------


class ProjectMember(models.Model):
    """A user's role on a project. What each role may do is projects/permissions.py's
    table; who is not bound by roles (the local owner, superusers, ...) too."""

    class Role(models.TextChoices):
        VIEWER = "viewer"
        SCREENER = "screener"
        EDITOR = "editor"
        OWNER = "owner"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "user"]
        constraints = [
            models.UniqueConstraint(fields=["user", "project"], name="projectmember_unique")
        ]
        indexes = [models.Index(fields=["user", "project"], name="projectmember_user_idx")]

    def __str__(self) -> str:
        return f"{self.user} ({self.role}) in {self.project_id}"


class ProjectInvitation(models.Model):
    """An invite link: whoever opens it signed in, before `expires_at`, becomes a member
    with `role` (once). Only the SHA-256 of its token is kept."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(
        max_length=16, choices=ProjectMember.Role.choices, default=ProjectMember.Role.VIEWER
    )
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    accepted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.project_id}: {self.role} until {self.expires_at:%Y-%m-%d %H:%M}"


# --- literature reviews (the workflow is in projects/review/, docs/REVIEW.md) ---------------


class ReviewSession(TimeStamped):
    """A literature review an agent drives with a person's decisions at checkpoints.

    The workflow's whole state lives here rather than in a process, so any web process can
    answer for a review and any Celery worker can pick up a step another one dropped. A
    running step holds a lease (`task_id`, `attempt`, `lease_expires_at`), renewed by the
    step while it works; a review whose lease ran out is handed to a new run
    (projects/review/services.py, "Steps").
    """

    class Stage(models.TextChoices):
        PLAN = "plan"
        SEARCH = "search"
        SCREEN = "screen"
        EXPAND = "expand"
        EXTRACT = "extract"
        COMPLETE = "complete"

    class Status(models.TextChoices):
        RUNNING = "running", "running (a step is working)"
        WAITING = "waiting", "waiting for a decision"
        COMPLETE = "complete"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # As long as any query the search tools take (settings.MAX_QUERY_CHARS): a longer
    # column than the services check would refuse nothing, a shorter one fails on PostgreSQL.
    query = models.CharField(max_length=4_000, help_text="The research question.")
    domain = models.CharField(max_length=32)
    max_results = models.PositiveSmallIntegerField(help_text="Most candidates to screen.")
    stage = models.CharField(max_length=16, choices=Stage.choices, default=Stage.PLAN)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    iteration = models.PositiveIntegerField(default=0, help_text="Decisions applied so far.")
    round = models.PositiveIntegerField(
        default=1, help_text="Plan-and-search rounds; a rejection starts another."
    )
    plan = models.JSONField(default=dict, blank=True)
    # The search engines the process that started the review may use (its ENGINES_ENABLED
    # and keys), so a worker configured differently never searches more than was allowed.
    engines_allowed = models.JSONField(default=list, blank=True)
    # Of those, the ones a search naming no engines asks there (engines.services.in_default):
    # the planner adds other engines only from these, a domain's own sources aside.
    engines_default = models.JSONField(default=list, blank=True)
    # PRISMA identification counts of the searches: {"search": {...}, "citations": {...}}.
    identification = models.JSONField(default=dict, blank=True)
    # The search log (PRISMA-S): every search the review ran, one entry per query and
    # source, every round kept: {round, source, query, query_sent, searched_at, count,
    # total, status, ...} (projects/review/searching.py search_log_entries).
    search_log = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="reviews"
    )
    # The collections (project ids) of the client that started the review, empty for an
    # unscoped one: a scoped client sees only reviews started within its collections or
    # filed into them, and the review's steps search only those collections.
    collections = models.JSONField(default=list, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    attempt = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=["running", "waiting", "complete", "failed"]),
                name="reviewsession_status_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(
                    stage__in=["plan", "search", "screen", "expand", "extract", "complete"]
                ),
                name="reviewsession_stage_valid",
            ),
            # Complete means both: no review is complete at another stage, or vice versa.
            models.CheckConstraint(
                condition=models.Q(status="complete", stage="complete")
                | (~models.Q(status="complete") & ~models.Q(stage="complete")),
                name="reviewsession_complete_consistent",
            ),
        ]
        indexes = [
            # The admin's list of reviews, newest first.
            models.Index(fields=["-created_at"], name="reviewsession_created_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.query[:80]} ({self.status})"


class ReviewCheckpoint(TimeStamped):
    """A point where the workflow waits for a person: `plan`, `screen`, `expand` or
    `extract`.

    At most one checkpoint of a session is pending (no `resolved_at`) at any time.
    """

    class Kind(models.TextChoices):
        PLAN = "plan"
        SCREEN = "screen"
        EXPAND = "expand"
        EXTRACT = "extract"

    session = models.ForeignKey(ReviewSession, on_delete=models.CASCADE, related_name="checkpoints")
    sequence = models.PositiveIntegerField(help_text="1, 2, 3, ... in the order raised.")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    round = models.PositiveIntegerField()
    payload = models.JSONField(default=dict, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["session", "sequence"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "sequence"], name="reviewcheckpoint_sequence_unique"
            ),
            models.UniqueConstraint(
                fields=["session"],
                condition=models.Q(resolved_at__isnull=True),
                name="reviewcheckpoint_one_pending",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.sequence} {self.kind}"


class ReviewDecision(TimeStamped):
    """A person's answer to one checkpoint, with their note; one per checkpoint."""

    class Action(models.TextChoices):
        APPROVE = "approve"
        EDIT = "edit"
        REJECT = "reject"

    checkpoint = models.OneToOneField(
        ReviewCheckpoint, on_delete=models.CASCADE, related_name="decision"
    )
    action = models.CharField(max_length=16, choices=Action.choices)
    data = models.JSONField(default=dict, blank=True)
    note = models.TextField(blank=True)
    decided_by = models.CharField(
        max_length=150, help_text="'agent', 'admin:<username>' or 'user:<username>'."
    )
    iteration = models.PositiveIntegerField(help_text="The session's iteration it made.")
    # Who decided (core/attribution.py): the person, and the client that acted for them.
    # Empty on decisions made before issue 39 (decided_by says who).
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    client = models.CharField(max_length=200, blank=True)

    def __str__(self) -> str:
        return f"{self.action} at {self.checkpoint}"


class ReviewCandidate(models.Model):
    """A paper the searches found for a review, and what screening made of it."""

    class Source(models.TextChoices):
        SEARCH = "search"
        CITATION = "citation", "citation search (snowballing)"

    class Status(models.TextChoices):
        PENDING = "pending"
        INCLUDED = "included"
        EXCLUDED = "excluded"

    session = models.ForeignKey(ReviewSession, on_delete=models.CASCADE, related_name="candidates")
    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="review_candidacies")
    source = models.CharField(max_length=16, choices=Source.choices)
    round = models.PositiveIntegerField()
    rank = models.PositiveIntegerField(help_text="1 = best, within its source.")
    score = models.FloatField(default=0.0)
    engines = models.JSONField(default=list, blank=True)
    queries = models.JSONField(default=list, blank=True)
    # Citation search: the included papers (paper_ids) this one cites.
    cites = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    reason = models.TextField(blank=True, help_text="Why it was excluded.")
    # Screening record by record (screen_decide): the order of the decisions,
    # which the stopping rule reads, and who made each. Null when decided at a checkpoint.
    screened_order = models.PositiveIntegerField(null=True, blank=True)
    screened_by = models.CharField(max_length=150, blank=True)
    # Every screener's decision, {screener: "include" | "exclude"}: the first decides the
    # status, the others are second opinions for the agreement (Cohen's kappa).
    votes = models.JSONField(default=dict, blank=True)
    # Who each screener of `votes` is: {screener: {"user", "user_id", "client", "at"}}
    # (core/attribution.py); the person whose decision set the status. Empty for decisions
    # recorded before issue 39.
    voters = models.JSONField(default=dict, blank=True)
    screened_by_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        constraints = [
            # A paper is a candidate of a review once, however many searches found it.
            models.UniqueConstraint(fields=["session", "paper"], name="reviewcandidate_unique"),
        ]
        indexes = [
            # Screening pages and exports: a review's candidates of one source by rank.
            models.Index(fields=["session", "source", "rank"], name="reviewcandidate_rank_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}: {self.paper_id} ({self.status})"


class ReviewDuplicate(models.Model):
    """A record of a review grouped with a candidate as another version of the same work
    (a preprint and its publication, the same paper from another source): screened once,
    through its group's candidate, and kept here with its source and engines and why it was
    grouped (projects/review/dedup.py). Splitting it out (`split_at`) undoes the merge: it
    becomes a candidate of its own; the row stays as the record of both."""

    session = models.ForeignKey(ReviewSession, on_delete=models.CASCADE, related_name="duplicates")
    # The group: the candidate screened for this work.
    candidate = models.ForeignKey(
        ReviewCandidate, on_delete=models.CASCADE, related_name="duplicates"
    )
    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="review_duplicates")
    source = models.CharField(max_length=16, choices=ReviewCandidate.Source.choices)
    round = models.PositiveIntegerField()
    score = models.FloatField(default=0.0)
    engines = models.JSONField(default=list, blank=True)
    queries = models.JSONField(default=list, blank=True)
    cites = models.JSONField(default=list, blank=True)
    match = models.CharField(max_length=300, help_text="Why it was grouped.")
    grouped_at = models.DateTimeField(auto_now_add=True)
    split_at = models.DateTimeField(null=True, blank=True)
    split_by = models.CharField(max_length=150, blank=True, help_text="'agent' or 'admin:<user>'.")

    class Meta:
        constraints = [
            # A paper is grouped into a review at most once at a time.
            models.UniqueConstraint(
                fields=["session", "paper"],
                condition=models.Q(split_at__isnull=True),
                name="reviewduplicate_one_live",
            ),
        ]
        indexes = [
            # PRISMA counts: a review's grouped records by source.
            models.Index(fields=["session", "source"], name="reviewduplicate_source_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}: {self.paper_id} grouped with {self.candidate_id}"


# --- alerts (saved searches, retraction watch) ----------------------------------------------


class Alert(models.Model):
    """Something a researcher should look at: new papers from a saved search, a retraction or
    correction of a paper a project holds, a saved search whose engines failed. Raised once
    per `key` (projects/alerts.py `notify`), shown to agents (`get_alerts`, `alerts://`), on
    the admin home page, in feeds and by e-mail; `read_at` marks it seen."""

    class Kind(models.TextChoices):
        NEW_PAPERS = "new_papers"
        RETRACTION = "retraction"
        CORRECTION = "correction"
        SEARCH_FAILED = "search_failed"
        OPEN_ACCESS = "open_access"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    title = models.CharField(max_length=300)
    body = models.TextField(blank=True)
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="alerts"
    )
    paper = models.ForeignKey(
        Paper, null=True, blank=True, on_delete=models.CASCADE, related_name="alerts"
    )
    link = models.CharField(max_length=500, blank=True, help_text="A path or URL to look at.")
    data = models.JSONField(default=dict, blank=True)
    # What makes two alerts the same (e.g. "retraction:<paper>:<project>"): raised once.
    key = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["-created_at"], name="alert_recent_idx"),
            models.Index(fields=["project", "-created_at"], name="alert_project_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.title}"


# --- saved searches (README.md, "Saved searches and alerts") -----------------------------


class SavedSearch(TimeStamped):
    """A search run again and again (by hand, or on its schedule by projects/watch/
    scheduler.py) whose new papers are reported: papers no earlier run of this search
    reported (`SavedSearchSeen`), however they entered the library."""

    class Schedule(models.TextChoices):
        MANUAL = "manual"
        HOURLY = "hourly"
        DAILY = "daily"
        WEEKLY = "weekly"

    name = models.CharField(max_length=100)
    query = models.CharField(max_length=4_000)  # settings.MAX_QUERY_CHARS, as search_papers
    # Engine ids as search_papers takes them; empty = every available engine.
    engines = models.JSONField(default=list, blank=True)
    # search_papers' `filters` (they narrow the library's part, engine `local`).
    filters = models.JSONField(default=dict, blank=True)
    max_results = models.PositiveSmallIntegerField(default=10, help_text="Per engine.")
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="saved_searches"
    )
    add_to_project = models.BooleanField(
        default=True, help_text="File new papers into the project (when there is one)."
    )
    open_access = models.BooleanField(default=False, help_text="Look for open-access PDFs.")
    schedule = models.CharField(max_length=16, choices=Schedule.choices, default="daily")
    # Overrides the schedule's period when set (seconds between runs).
    interval_seconds = models.PositiveIntegerField(null=True, blank=True)
    enabled = models.BooleanField(default=True)
    next_run_at = models.DateTimeField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    # Opens the search's Atom feed (/feeds/saved/<name>.atom?token=...).
    feed_token = models.CharField(max_length=64, default=feed_token_new, editable=False)
    # Who made it: a search filed in no project is its maker's own (projects/permissions.py).
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="saved_searches",
    )

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "saved searches"
        constraints = [
            # Unique within a project (a client scoped to collections never meets the
            # names of searches outside them), and among searches filed nowhere.
            models.UniqueConstraint(
                Lower("name"), "project", name="savedsearch_name_project_unique_ci"
            ),
            models.UniqueConstraint(
                Lower("name"),
                condition=models.Q(project__isnull=True),
                name="savedsearch_name_unfiled_unique_ci",
            ),
        ]
        indexes = [
            # The scheduler's claim: enabled searches whose next_run_at has passed.
            models.Index(fields=["enabled", "next_run_at"], name="savedsearch_due_idx"),
        ]

    def __str__(self) -> str:
        return self.name


class SavedSearchRun(models.Model):
    """One run of a saved search: what each engine did and which papers were new."""

    class Trigger(models.TextChoices):
        MANUAL = "manual"
        SCHEDULE = "schedule"

    class Status(models.TextChoices):
        RUNNING = "running"
        OK = "ok"
        PARTIAL = "partial", "partial (some engines failed)"
        FAILED = "failed"

    search = models.ForeignKey(SavedSearch, on_delete=models.CASCADE, related_name="runs")
    trigger = models.CharField(max_length=16, choices=Trigger.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    # {engine: {"status": "ok" | "timeout" | ..., "count": n, "message": ...}}
    engines = models.JSONField(default=dict, blank=True)
    found = models.PositiveIntegerField(default=0)
    new = models.PositiveIntegerField(default=0)
    # The new papers' ids, best first (the project's screening model, else engine order).
    new_paper_ids = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [
            # A search's latest runs (list_saved_searches, the feed, the admin).
            models.Index(fields=["search", "-started_at"], name="savedsearchrun_recent_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.search_id} @ {self.started_at:%Y-%m-%d %H:%M} ({self.status})"


class SavedSearchSeen(models.Model):
    """An identity key (doi:..., arxiv:..., title:<title key>, <scheme>:<id>) of a work an
    earlier run of this search found: that work is never reported new again, even if it
    left the library meanwhile."""

    search = models.ForeignKey(SavedSearch, on_delete=models.CASCADE, related_name="seen")
    key = models.CharField(max_length=255)
    first_run = models.ForeignKey(
        SavedSearchRun, null=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        verbose_name = "saved search seen key"
        constraints = [
            models.UniqueConstraint(fields=["search", "key"], name="savedsearchseen_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.search_id}: {self.key}"


# --- data extraction (projects/review/extraction/, docs/EXTRACTION.md) ----------------------


class ExtractionForm(TimeStamped):
    """One version of the extraction form of a review or of a project: the fields every
    included study is extracted by. A review (or project) has one form; changing it makes
    a new row with the next `version`, so the values answered under an earlier version keep
    the fields they answered (ExtractionValue.field)."""

    session = models.ForeignKey(
        ReviewSession,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="extraction_forms",
    )
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="extraction_forms"
    )
    name = models.CharField(max_length=200)
    version = models.PositiveIntegerField(help_text="1, 2, 3, ... one per change.")
    created_by = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-version"]
        constraints = [
            models.CheckConstraint(
                condition=(models.Q(session__isnull=False) & models.Q(project__isnull=True))
                | (models.Q(session__isnull=True) & models.Q(project__isnull=False)),
                name="extractionform_one_owner",
            ),
            # The current form of a review or project: its highest version (these unique
            # indexes also serve that lookup).
            models.UniqueConstraint(
                fields=["session", "version"],
                condition=models.Q(session__isnull=False),
                name="extractionform_session_version_unique",
            ),
            models.UniqueConstraint(
                fields=["project", "version"],
                condition=models.Q(project__isnull=False),
                name="extractionform_project_version_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"


class ExtractionField(models.Model):
    """A field of one form version: what to extract (`description` is the instruction), of
    which type, and whether a supporting quote is required."""

    class Type(models.TextChoices):
        TEXT = "text"
        NUMBER = "number", "number (with unit)"
        INTEGER = "integer"
        CHOICE = "choice", "choice (one of a list)"
        YES_NO_UNCLEAR = "yes_no_unclear", "yes / no / unclear"
        RANGE = "range", "range (low-high)"

    form = models.ForeignKey(ExtractionForm, on_delete=models.CASCADE, related_name="fields")
    key = models.CharField(max_length=50, help_text="e.g. sample_size")
    label = models.CharField(max_length=200)
    type = models.CharField(max_length=16, choices=Type.choices)
    unit = models.CharField(max_length=30, blank=True, help_text="number and range fields.")
    choices = models.JSONField(default=list, blank=True, help_text="choice fields.")
    # Numbers (and range ends) of two extractors within this (in the field's unit) agree.
    tolerance = models.FloatField(null=True, blank=True)
    description = models.TextField(blank=True, help_text="The instruction to extractors.")
    quote_required = models.BooleanField(default=True)
    order = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["form", "order"]
        constraints = [
            models.UniqueConstraint(fields=["form", "key"], name="extractionfield_key_unique"),
            models.UniqueConstraint(fields=["form", "order"], name="extractionfield_order_unique"),
            models.CheckConstraint(
                condition=models.Q(
                    type__in=["text", "number", "integer", "choice", "yes_no_unclear", "range"]
                ),
                name="extractionfield_type_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.type})"


class AnchorStatus(models.TextChoices):
    """Where a value's quote was found (projects/review/extraction/anchoring.py)."""

    VERIFIED = "verified", "verified (on the page, with boxes)"
    APPROXIMATE = "approximate", "approximate (closest text; to review)"
    NOT_FOUND = "not_found", "not found (to review)"
    ABSTRACT_ONLY = "abstract_only", "abstract only (no PDF text)"
    NO_QUOTE = "no_quote", "no quote given"


# AnchorStatus's values, for the check constraints.
ANCHOR_STATUSES = ["verified", "approximate", "not_found", "abstract_only", "no_quote"]


class AnchoredValue(TimeStamped):
    """A value with its supporting quote and where the quote was found: the page and line
    boxes (PDF points, origin bottom-left) of the passage index, the text as printed (or
    the closest text) and its similarity 0..1."""

    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="+")
    value = models.JSONField(null=True, blank=True)
    quote = models.TextField(blank=True)
    page = models.PositiveIntegerField(null=True, blank=True, help_text="The page given.")
    anchor_status = models.CharField(max_length=16, choices=AnchorStatus.choices)
    anchor_page = models.PositiveIntegerField(null=True, blank=True)
    anchor_rects = models.JSONField(default=list, blank=True)
    anchor_text = models.TextField(blank=True)
    anchor_score = models.FloatField(default=0.0)
    # The verified quote's highlight in the extraction colour (extraction/highlights.py),
    # for a link to it; None when there is none or a person deleted it.
    highlight = models.ForeignKey(
        Annotation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        abstract = True


class ExtractionValue(AnchoredValue):
    """One extractor's value of one field for one paper, under the form version the field
    belongs to. An extractor is a person (`user`), an agent client (`agent`) or a person
    working through an agent; `extractor` is the label agreement compares by."""

    form = models.ForeignKey(ExtractionForm, on_delete=models.CASCADE, related_name="values")
    field = models.ForeignKey(ExtractionField, on_delete=models.CASCADE, related_name="values")
    extractor = models.CharField(max_length=300)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    agent = models.CharField(max_length=150, blank=True)
    # The client that recorded it (an API token's or OAuth client's name; core.identity).
    client = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            # Recording a field again replaces the extractor's value (same form version).
            models.UniqueConstraint(
                fields=["field", "paper", "extractor"], name="extractionvalue_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(anchor_status__in=ANCHOR_STATUSES),
                name="extractionvalue_anchor_status_valid",
            ),
        ]
        indexes = [
            # Evidence rows, agreement, what is still empty: a form version's values by paper.
            models.Index(fields=["form", "paper"], name="extractionvalue_form_paper_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.paper_id} {self.field_id} by {self.extractor}"


class ExtractionAdjudication(AnchoredValue):
    """The third decision on a field of a paper whose extractors disagree: the value that
    stands, who decided and why (a disagreement is settled once)."""

    form = models.ForeignKey(ExtractionForm, on_delete=models.CASCADE, related_name="adjudications")
    field = models.ForeignKey(
        ExtractionField, on_delete=models.CASCADE, related_name="adjudications"
    )
    decided_by = models.CharField(max_length=300)
    reason = models.TextField()
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    client = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["field", "paper"], name="extractionadjudication_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(anchor_status__in=ANCHOR_STATUSES),
                name="extractionadj_anchor_status_valid",
            ),
        ]
        indexes = [
            # Evidence rows and agreement: a form version's adjudications by paper.
            models.Index(fields=["form", "paper"], name="extractionadj_form_paper_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.paper_id} {self.field_id} settled by {self.decided_by}"

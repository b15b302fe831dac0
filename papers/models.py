"""The paper library: papers, their authors, venues, keywords, categories and citations.

Every paper has three identifiers (README.md, "Identifiers"): `paper_id` (an
auto-increment integer), `human_id` (stored in the `id` column, e.g.
`[Vaswani, A., Shazeer, N. 2017]`, `-2`/`-3` for clashes) and `citekey`
(Better-BibTeX style, e.g. `vaswani2017attention`). DOI and arXiv id are normalised and
unique, so the database itself refuses a duplicate.

One module because it is the app's schema (Django's `models.py`): the constraints and index
comments across models are read together, and the migrations are made from it.
"""

from __future__ import annotations

from typing import Any

from django.db import models, transaction
from django.db.models import Q
from django.db.models.functions import Lower

from core.models import TimeStamped


class Institution(TimeStamped):
    name = models.TextField()
    # Folded, lower-case form of the name: one row per institution however it is spelled.
    name_key = models.CharField(max_length=255, unique=True)

    def __str__(self) -> str:
        return self.name


class Author(TimeStamped):
    name = models.TextField(help_text="Display name, e.g. 'Ashish Vaswani'.")
    family_name = models.TextField(blank=True)
    given_name = models.TextField(blank=True)
    name_key = models.CharField(max_length=255, unique=True)
    profile_link = models.TextField(blank=True)

    class Meta:
        indexes = [
            # search_by_author / admin author search: prefix and equality on the family name.
            models.Index(Lower("family_name"), name="author_family_lower_idx"),
            # an author pattern's literal start ('Christopher*Manning', filters._led_by):
            # a range on SQLite. PostgreSQL reads text_pattern_ops indexes of both lowered
            # names instead (migration 0013).
            models.Index(Lower("name"), name="author_name_lower_idx"),
        ]

    def __str__(self) -> str:
        return self.name


class Venue(TimeStamped):
    name = models.TextField()
    name_key = models.CharField(max_length=255, unique=True)
    short_name = models.CharField(max_length=64, blank=True, help_text="e.g. 'acl', 'emnlp'.")

    def __str__(self) -> str:
        return self.name


class Keyword(TimeStamped):
    """A user-managed keyword; names are unique regardless of case."""

    name = models.CharField(max_length=100)
    name_key = models.CharField(max_length=100, unique=True)

    def __str__(self) -> str:
        return self.name


class Category(TimeStamped):
    """A subject category assigned by a source, e.g. arXiv's `cs.CL`."""

    name = models.CharField(max_length=100, unique=True)
    scheme = models.CharField(max_length=32, blank=True, help_text="e.g. 'arxiv'.")
    description = models.TextField(blank=True)

    class Meta:
        verbose_name_plural = "categories"

    def __str__(self) -> str:
        return self.name


class PaperQuerySet(models.QuerySet["Paper"]):
    def delete(self) -> tuple[int, dict[str, int]]:
        """Delete with the papers' rows locked first (PostgreSQL; SQLite's write transactions
        already run one at a time). A background writer (an embedding, a passage, a PDF)
        locks the paper before it inserts a row pointing at it, so it either commits before
        this delete and its row is cascaded, or waits and finds the paper gone. Without the
        lock it could commit between the cascade and the paper's own DELETE, which then
        failed on the foreign key."""
        with transaction.atomic(using=self.db):
            lock_papers(self)
            return super().delete()


def lock_papers(papers: models.QuerySet[Paper], *, no_key: bool = False) -> set[int]:
    """Lock these papers' rows for the transaction (on PostgreSQL; SQLite ignores it) and
    return the primary keys that still exist. `no_key` takes the weaker lock a writer of a
    dependent row needs: it waits for a delete, while rows that merely point at the paper
    (a keyword link, a citation) can still be added."""
    # A fresh query over the same rows: FOR UPDATE is refused with DISTINCT or joins.
    rows = Paper.objects.using(papers.db).filter(pk__in=papers.values("pk"))
    locked = rows.select_for_update(no_key=no_key).order_by("pk")
    return set(locked.values_list("pk", flat=True))


class Paper(TimeStamped):
    paper_id = models.BigAutoField(primary_key=True)
    # Django reserves the field name `id` for primary keys; the column keeps the name clients see.
    human_id = models.CharField("id", max_length=600, unique=True, db_column="id")
    human_id_base = models.CharField(max_length=600, editable=False)
    human_id_seq = models.PositiveIntegerField(default=1, editable=False)
    citekey = models.CharField(max_length=200, unique=True)
    citekey_base = models.CharField(max_length=200, editable=False)

    entry_type = models.CharField(max_length=32, default="article", help_text="BibTeX type.")
    title = models.TextField()
    title_key = models.CharField(max_length=255, editable=False)
    abstract = models.TextField(blank=True)
    snippet = models.TextField(blank=True, help_text="Short text when no abstract is known.")
    authors_string = models.TextField(blank=True)
    publication_info = models.TextField(blank=True)
    publication_date = models.CharField(max_length=32, blank=True, help_text="YYYY[-MM[-DD]]")
    year = models.PositiveSmallIntegerField(null=True, blank=True)
    venue = models.ForeignKey(
        Venue, null=True, blank=True, on_delete=models.SET_NULL, related_name="papers"
    )
    volume = models.CharField(max_length=64, blank=True)
    number = models.CharField(max_length=64, blank=True)
    pages = models.CharField(max_length=64, blank=True)
    publisher = models.TextField(blank=True)

    source = models.CharField(max_length=64, default="local")
    source_id = models.CharField(max_length=255, blank=True)
    source_url = models.TextField(blank=True)
    pdf_url = models.TextField(blank=True)
    # NULL, not '', when absent: the unique constraints must allow many papers without one.
    doi = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001
    arxiv_id = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001

    citation_count = models.PositiveIntegerField(default=0)
    # Google Scholar (SerpAPI) handles, for its cited-by and citation lookups.
    cites_id = models.CharField(max_length=255, blank=True)
    result_id = models.CharField(max_length=255, blank=True)
    citation_id = models.CharField(max_length=255, blank=True)
    bibtex_link = models.TextField(blank=True)
    cached_page_link = models.TextField(blank=True)
    related_pages_link = models.TextField(blank=True)
    versions_count = models.PositiveIntegerField(default=0)
    versions_link = models.TextField(blank=True)
    resources = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # Which summary template get_paper_summary returns when none is named.
    preferred_summary_template = models.CharField(max_length=100, blank=True)
    # Retraction watch (papers/retractions.py): the gravest status the notices give
    # ('' = none known), the notices, and when every source last answered for the paper.
    retraction_status = models.CharField(
        max_length=24,
        blank=True,
        choices=[
            ("retracted", "Retracted"),
            ("withdrawn", "Withdrawn"),
            ("expression_of_concern", "Expression of concern"),
            ("corrected", "Corrected"),
        ],
    )
    retraction_notices = models.JSONField(default=list, blank=True)
    retraction_checked_at = models.DateTimeField(null=True, blank=True)

    authors = models.ManyToManyField(
        Author, through="PaperAuthor", related_name="papers", blank=True
    )
    keywords = models.ManyToManyField(
        Keyword, through="PaperKeyword", related_name="papers", blank=True
    )
    categories = models.ManyToManyField(
        Category, through="PaperCategory", related_name="papers", blank=True
    )

    objects = PaperQuerySet.as_manager()

    class Meta:
        ordering = ["paper_id"]
        constraints = [
            models.UniqueConstraint(fields=["doi"], name="paper_doi_unique"),
            models.UniqueConstraint(fields=["arxiv_id"], name="paper_arxiv_unique"),
            models.CheckConstraint(
                condition=Q(year__isnull=True) | Q(year__gte=1000, year__lte=2999),
                name="paper_year_plausible",
            ),
        ]
        indexes = [
            # year filters and timeline trends: WHERE year BETWEEN a AND b, with the ids, so
            # that a search reads a year filter's papers from the index alone on PostgreSQL
            # (SQLite's indexes hold the rowid, paper_id, anyway): at 95k papers a year's
            # half of the library in 9 ms, not 62 by a scan of the papers' rows.
            models.Index(fields=["year", "paper_id"], name="paper_year_idx"),
            # venue facet and venue filter (the FK index) sorted by year for listings.
            models.Index(fields=["venue", "year"], name="paper_venue_year_idx"),
            # de-duplication's last resort: same normalised title in the same year.
            models.Index(fields=["title_key", "year"], name="paper_title_year_idx"),
            # clash-suffix allocation: the highest suffix taken for an identifier base.
            models.Index(fields=["human_id_base", "human_id_seq"], name="paper_hid_base_idx"),
            # citekey allocation: which keys with this base exist.
            models.Index(fields=["citekey_base"], name="paper_citekey_base_idx"),
            # source filter and "papers from arxiv" listings.
            models.Index(fields=["source"], name="paper_source_idx"),
            # most-cited listings.
            models.Index(fields=["-citation_count"], name="paper_citations_idx"),
            # the admin's "Retracted" filter and flagged lists: only flagged papers indexed.
            models.Index(
                fields=["retraction_status"],
                name="paper_retraction_idx",
                condition=~Q(retraction_status=""),
            ),
            # papers due for a retraction check (never or longest ago), among those with a DOI.
            models.Index(
                fields=["retraction_checked_at"],
                name="paper_retraction_due_idx",
                condition=Q(doi__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.human_id} {self.title[:80]}"

    def delete(
        self, using: Any | None = None, keep_parents: bool = False
    ) -> tuple[int, dict[str, int]]:
        """One paper deleted as PaperQuerySet.delete deletes many: its row locked first."""
        with transaction.atomic(using=using):
            lock_papers(Paper.objects.using(using).filter(pk=self.pk))
            return super().delete(using=using, keep_parents=keep_parents)

    @property
    def ordered_author_names(self) -> list[str]:
        return [link.author.name for link in self.author_links.all()]

    def alternates(self) -> dict[str, Any]:
        return dict(self.metadata.get("alternates", {}))


class PaperAuthor(models.Model):
    """The ordered paper–author link; `position` starts at 0."""

    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="author_links")
    author = models.ForeignKey(Author, on_delete=models.CASCADE, related_name="paper_links")
    position = models.PositiveSmallIntegerField()
    affiliation = models.ForeignKey(
        Institution, null=True, blank=True, on_delete=models.SET_NULL, related_name="author_links"
    )

    class Meta:
        ordering = ["paper", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["paper", "position"], name="paperauthor_position_unique"
            )
        ]
        indexes = [
            # papers by an author (search_by_author, author facet counts).
            models.Index(fields=["author", "paper"], name="paperauthor_author_idx"),
            # institution facet and filter.
            models.Index(fields=["affiliation"], name="paperauthor_affil_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.paper_id} #{self.position}: {self.author_id}"


class PaperKeyword(models.Model):
    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="keyword_links")
    keyword = models.ForeignKey(Keyword, on_delete=models.CASCADE, related_name="paper_links")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["paper", "keyword"], name="paperkeyword_unique")
        ]
        indexes = [
            # search_papers_by_keyword: papers carrying a keyword.
            models.Index(fields=["keyword", "paper"], name="paperkeyword_keyword_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.paper_id}: {self.keyword_id}"


class PaperCategory(models.Model):
    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="category_links")
    category = models.ForeignKey(Category, on_delete=models.CASCADE, related_name="paper_links")

    class Meta:
        verbose_name_plural = "paper categories"
        constraints = [
            models.UniqueConstraint(fields=["paper", "category"], name="papercategory_unique")
        ]
        indexes = [
            # keyword search over source categories (cs.CL) and the category facet.
            models.Index(fields=["category", "paper"], name="papercategory_category_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.paper_id}: {self.category_id}"


class PaperIdentifier(models.Model):
    """Other identifiers of a paper: ACL Anthology id, citekey aliases, OpenAlex, S2, ...

    Used for de-duplication (the same source id is the same paper) and for resolving a
    reference such as an old BibTeX key to the paper it names.
    """

    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="identifiers")
    scheme = models.CharField(max_length=32)
    value = models.CharField(max_length=255)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scheme", "value"], name="paperidentifier_unique")
        ]
        indexes = [
            # the identifiers of one paper, for its detail record.
            models.Index(fields=["paper"], name="paperidentifier_paper_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.scheme}:{self.value}"


class Citation(models.Model):
    """`citing` cites `cited`; both are papers in the library."""

    citing = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="references")
    cited = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="cited_by")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["citing", "cited"], name="citation_unique"),
            models.CheckConstraint(
                condition=~Q(citing=models.F("cited")), name="citation_not_self"
            ),
        ]
        indexes = [
            # get_citing_papers: who cites this paper (the reverse direction).
            models.Index(fields=["cited", "citing"], name="citation_cited_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.citing_id} cites {self.cited_id}"


class PaperAsset(TimeStamped):
    """A text asset of a paper: a summary by template, its source markdown, a translation.

    The content lives in the knowledge base (`assets/<paper_id>/...`) or behind the internal
    ASSET_BASE_URL; this row says that it exists and describes it. Locations are never shown
    to clients.
    """

    class Kind(models.TextChoices):
        SUMMARY = "summary"
        SOURCE = "source"
        TRANSLATION = "translation"

    class Storage(models.TextChoices):
        LOCAL = "local"
        REMOTE = "remote"

    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="assets")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # The template name of a summary ('brief', 'deep_read'), the language code of a
    # translation ('zh', 'pt-BR'), '' for the source.
    name = models.CharField(max_length=100, blank=True)
    storage = models.CharField(max_length=16, choices=Storage.choices, default=Storage.LOCAL)
    content_type = models.CharField(max_length=64, default="text/markdown")
    size = models.PositiveIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["paper", "kind", "name"], name="paperasset_unique"),
        ]
        indexes = [
            # available_summary_templates / translations of a paper.
            models.Index(fields=["paper", "kind"], name="paperasset_paper_kind_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.paper_id} {self.kind} {self.name}".strip()


class StoredVector(models.Model):
    """The columns of a stored embedding, for either tier: float32 values, little-endian, in
    `vector`; `text_hash` is the hash of the text that was embedded, so re-indexing skips
    papers whose title and abstract did not change; `model` names the model that made it."""

    model = models.CharField(max_length=100)
    dimensions = models.PositiveSmallIntegerField()
    vector = models.BinaryField()
    text_hash = models.CharField(max_length=64)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.paper_id} ({self.model})"  # type: ignore[attr-defined]


class PaperEmbedding(StoredVector):
    """A paper's first-tier embedding for semantic search (papers/search/semantic.py)."""

    paper = models.OneToOneField(
        Paper, on_delete=models.CASCADE, primary_key=True, related_name="embedding"
    )

    class Meta:
        indexes = [
            # loading the index (every vector of the current model) and its freshness
            # check on the search path after a write (count and newest updated_at; the
            # table's generation, migration 0014, says when): answered from the index
            # alone, without reading the rows' vectors.
            models.Index(fields=["model", "updated_at"], name="paperembedding_model_upd_idx"),
        ]


class PaperStrongEmbedding(StoredVector):
    """A paper's second-tier embedding, made by the slower, stronger model of
    EMBEDDING_MODEL_STRONG in the background after the first tier
    (papers/search/strong_tier.py). A paper has at most one of each; search uses this one
    where it exists (papers/search/tiers.py)."""

    paper = models.OneToOneField(
        Paper, on_delete=models.CASCADE, primary_key=True, related_name="strong_embedding"
    )

    class Meta:
        indexes = [
            # loading the second-tier index and its freshness check, as above.
            models.Index(fields=["model", "updated_at"], name="paperstrongemb_model_upd_idx"),
        ]


class PaperPdf(TimeStamped):
    """The PDF of a paper: a file under DOWNLOADS_DIR, its sha256 and page count.

    One PDF per paper; attaching another file replaces it (annotations stay and are redrawn
    on the new file). `annotated_file_name` is the copy carrying the paper's annotations as
    real PDF annotations; the original file is never modified.
    """

    class Origin(models.TextChoices):
        ATTACHED = "attached"  # a local file: attach_pdf, the Zotero import
        UPLOADED = "uploaded"  # the admin's upload
        DOWNLOADED = "downloaded"  # the paper's pdf_url

    paper = models.OneToOneField(Paper, on_delete=models.CASCADE, related_name="pdf")
    # Relative to DOWNLOADS_DIR; made by the service from the paper's id and citekey only.
    file_name = models.CharField(max_length=255, unique=True)
    annotated_file_name = models.CharField(max_length=255, blank=True)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()
    page_count = models.PositiveIntegerField()
    origin = models.CharField(max_length=16, choices=Origin.choices)
    original_name = models.CharField(max_length=255, blank=True, help_text="As uploaded.")
    source_url = models.TextField(blank=True, help_text="Where a downloaded file came from.")

    class Meta:
        verbose_name = "paper PDF"
        constraints = [
            models.CheckConstraint(condition=Q(page_count__gte=1), name="paperpdf_has_pages"),
        ]

    def __str__(self) -> str:
        return f"{self.paper_id}: {self.file_name} ({self.page_count} pp.)"


class Annotation(TimeStamped):
    """A highlight or an area annotation on a page of a paper's PDF.

    `rects` are `[x1, y1, x2, y2]` boxes in PDF points with the origin at the bottom-left of
    the page's MediaBox, one per text line for highlights: Zotero's `position.rects`
    (docs/ZOTERO-TOOLS.md), so annotations move between the two unchanged.
    """

    class Kind(models.TextChoices):
        HIGHLIGHT = "highlight"
        AREA = "area"

    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="annotations")
    page = models.PositiveIntegerField(help_text="1-based page number.")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    rects = models.JSONField(default=list)
    text = models.TextField(blank=True, help_text="The highlighted text, as on the page.")
    color = models.CharField(max_length=7, help_text="#rrggbb")
    comment = models.TextField(blank=True)
    # The file the annotation was made on: after the PDF is replaced, it may not fit.
    pdf_sha256 = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["paper", "page", "pk"]
        constraints = [
            models.CheckConstraint(condition=Q(page__gte=1), name="annotation_page_positive"),
            models.CheckConstraint(
                condition=Q(kind__in=["highlight", "area"]), name="annotation_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(color__regex=r"^#[0-9a-f]{6}$"), name="annotation_color_hex"
            ),
        ]
        indexes = [
            # list_annotations(paper, page?) and the annotated copy: a paper's annotations
            # in page order.
            models.Index(fields=["paper", "page"], name="annotation_paper_page_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.paper_id} p.{self.page} {self.kind} {self.color}"


class Passage(models.Model):
    """A paragraph-sized piece of a paper's PDF (papers/passages/): what search_passages
    ranks and find_quote looks in first.

    `text` is the page's words in reading order with hyphenation at line ends undone and
    ligatures expanded; `rects` are its lines' boxes, `[x1, y1, x2, y2]` in PDF points with
    the origin at the bottom-left (Annotation's convention). `pdf_sha256` names the file the
    passage came from, so re-indexing an unchanged file is skipped. `length` (index terms)
    and `vector` (the first-tier embedding, float32) serve the hybrid ranking.
    """

    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="passages")
    page = models.PositiveIntegerField(help_text="1-based page number.")
    order = models.PositiveIntegerField(help_text="Reading order on the page, from 1.")
    text = models.TextField()
    rects = models.JSONField(default=list)
    pdf_sha256 = models.CharField(max_length=64)
    length = models.PositiveIntegerField(default=0, help_text="Index terms, for BM25.")
    model = models.CharField(max_length=100, blank=True)
    vector = models.BinaryField(null=True, blank=True)

    class Meta:
        ordering = ["paper", "page", "order"]
        constraints = [
            models.UniqueConstraint(
                fields=["paper", "page", "order"], name="passage_paper_page_order_unique"
            ),
            models.CheckConstraint(condition=Q(page__gte=1), name="passage_page_positive"),
        ]
        # The unique constraint's index serves a paper's passages by page (the resource,
        # find_quote's page neighbours, re-indexing a paper).

    def __str__(self) -> str:
        return f"{self.paper_id} p.{self.page} #{self.order}"


class PassageTerm(models.Model):
    """A BM25 posting of a passage: `term_id` is papers.search.analysis.term_id of a stem,
    `impact` the passage's term-frequency part x IMPACT_SCALE (papers/search/postings.py's
    formula, one field)."""

    passage = models.ForeignKey(Passage, on_delete=models.CASCADE, related_name="terms")
    term_id = models.BigIntegerField()
    impact = models.PositiveSmallIntegerField()

    class Meta:
        indexes = [
            # search_passages / find_quote: a query term's postings (WHERE term_id IN ...).
            models.Index(fields=["term_id", "impact"], name="passageterm_term_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.passage_id}: {self.term_id} ({self.impact})"

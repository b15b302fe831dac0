"""Research projects and which papers they hold. A paper can be in many projects."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Lower

from papers.models import Paper, TimeStamped


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

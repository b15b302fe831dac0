"""Retraction watch (docs/RETRACTIONS.md): the paper's retraction status, notices and last check.

On SQLite, adding a NOT NULL column makes Django rebuild papers_paper (new table, copy,
rename), which drops the triggers other migrations put on it (0003: the full-text row of a
deleted paper, 0006: its postings): they are created again at the end.
"""

import importlib

from django.db import migrations, models

# The migrations whose SQLite triggers on papers_paper a table rebuild drops.
TRIGGER_MIGRATIONS = ("papers.migrations.0003_fulltext", "papers.migrations.0006_lexical_postings")


def restore_sqlite_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    with schema_editor.connection.cursor() as cursor:
        for name in TRIGGER_MIGRATIONS:
            for statement in importlib.import_module(name).SQLITE_UP:
                if statement.lstrip().upper().startswith("CREATE TRIGGER"):
                    cursor.execute(statement)


class Migration(migrations.Migration):

    dependencies = [
        ('papers', '0008_passages'),
    ]

    operations = [
        migrations.AddField(
            model_name='paper',
            name='retraction_checked_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='paper',
            name='retraction_notices',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name='paper',
            name='retraction_status',
            field=models.CharField(blank=True, choices=[('retracted', 'Retracted'), ('withdrawn', 'Withdrawn'), ('expression_of_concern', 'Expression of concern'), ('corrected', 'Corrected')], max_length=24),
        ),
        migrations.AddIndex(
            model_name='paper',
            index=models.Index(condition=models.Q(('retraction_status', ''), _negated=True), fields=['retraction_status'], name='paper_retraction_idx'),
        ),
        migrations.AddIndex(
            model_name='paper',
            index=models.Index(condition=models.Q(('doi__isnull', False)), fields=['retraction_checked_at'], name='paper_retraction_due_idx'),
        ),
        migrations.RunPython(restore_sqlite_triggers, migrations.RunPython.noop, elidable=False),
    ]

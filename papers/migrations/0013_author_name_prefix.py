"""Indexes for an author pattern's literal start (papers/search/filters.py, `_led_by`):
'Christopher*Manning', as the query reading writes a full name, reads the authors whose
lowered name or family name starts with 'christopher' instead of every author.

SQLite compares `lower(name)` with a range, answered by `author_name_lower_idx` (and
0001's `author_family_lower_idx`). PostgreSQL compares it with a LIKE prefix, which a
default btree serves only under the C collation: `text_pattern_ops` indexes of both
lowered names serve it under any collation.
"""

from django.db import migrations, models
from django.db.models.functions import Lower

POSTGRESQL_UP = [
    "CREATE INDEX IF NOT EXISTS author_name_lower_like "
    "ON papers_author (lower(name) text_pattern_ops)",
    "CREATE INDEX IF NOT EXISTS author_family_lower_like "
    "ON papers_author (lower(family_name) text_pattern_ops)",
]
POSTGRESQL_DOWN = [
    "DROP INDEX IF EXISTS author_name_lower_like",
    "DROP INDEX IF EXISTS author_family_lower_like",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("papers", "0012_embedding_freshness_index"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="author",
            index=models.Index(Lower("name"), name="author_name_lower_idx"),
        ),
        migrations.RunPython(_run(POSTGRESQL_UP), _run(POSTGRESQL_DOWN), elidable=False),
    ]

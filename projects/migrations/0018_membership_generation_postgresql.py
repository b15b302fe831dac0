"""The projects' membership table gets the generation papers migration 0017 gives the
paper tables facets count (PostgreSQL; nothing on SQLite)."""

import importlib

from django.db import migrations

TABLE = "projects_projectpaper"
papers_0017 = importlib.import_module("papers.migrations.0017_table_generations_postgresql")


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            for statement in papers_0017.table_triggers(TABLE):
                cursor.execute(statement)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            for statement in papers_0017.drop_table_triggers(TABLE):
                cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("projects", "0017_project_members"),
        ("papers", "0017_table_generations_postgresql"),
    ]

    operations = [
        migrations.RunPython(create, drop, elidable=False),
    ]

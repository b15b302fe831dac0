"""The projects' tables get the generations papers migration 0018 gives every table a
search filter reads (the `project` filter and a scoped client's projects), so that the
papers a filter allows can be kept between searches."""

import importlib

from django.db import migrations

papers_0018 = importlib.import_module("papers.migrations.0018_filter_generations")

WATCHED = {"projects_projectpaper": None, "projects_project": None}
# papers 0017 / projects 0018 gave the membership its insert and delete triggers on PostgreSQL.
PG_HAVE_INSERT_DELETE = {"projects_projectpaper"}


def create(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    with schema_editor.connection.cursor() as cursor:
        for statement in papers_0018.up_statements(vendor, WATCHED, PG_HAVE_INSERT_DELETE):
            cursor.execute(statement)


def drop(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    with schema_editor.connection.cursor() as cursor:
        for statement in papers_0018.down_statements(vendor, WATCHED, PG_HAVE_INSERT_DELETE):
            cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("projects", "0018_membership_generation_postgresql"),
        ("papers", "0018_filter_generations"),
    ]

    operations = [
        migrations.RunPython(create, drop, elidable=False),
    ]

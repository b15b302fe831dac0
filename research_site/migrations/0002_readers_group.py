"""The "Readers" group: its members may read through the REST API but never write."""

from django.db import migrations

READERS_GROUP = "Readers"  # research_site.tokens.READERS_GROUP; migrations never import app code


def create_readers(apps, schema_editor):
    apps.get_model("auth", "Group").objects.get_or_create(name=READERS_GROUP)


def delete_readers(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name=READERS_GROUP).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("research_site", "0001_api_tokens"),
    ]

    operations = [migrations.RunPython(create_readers, delete_readers)]

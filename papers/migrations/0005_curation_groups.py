"""Who may do what in the admin, as groups a staff user is put in:

- "Readers" (made by research_site 0002 for the REST API) may view the library and its
  projects, never change them;
- "Curators" may add, change and delete papers, their related rows and projects.

Superusers can do everything anyway. Models added later grant their own permissions in
their own migrations; this one names the models it covers, so what it grants does not
depend on the order other apps' migrations happen to run in.
"""

from django.contrib.auth.management import create_permissions
from django.db import migrations

READERS_GROUP = "Readers"  # research_site.tokens.READERS_GROUP; migrations never import app code
CURATORS_GROUP = "Curators"
PROJECT_MODELS = ("project", "projectpaper")


def _library_permissions(apps):
    # Permissions are normally made after `migrate` (post_migrate); on a fresh database
    # they do not exist yet, so they are made here first.
    for label in ("papers", "projects"):
        config = apps.get_app_config(label)
        config.models_module = True
        create_permissions(config, apps=apps, verbosity=0)
        config.models_module = None
    Permission = apps.get_model("auth", "Permission")
    papers = Permission.objects.filter(content_type__app_label="papers")
    projects = Permission.objects.filter(
        content_type__app_label="projects", content_type__model__in=PROJECT_MODELS
    )
    return papers | projects


def create_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    permissions = _library_permissions(apps)
    readers, _ = Group.objects.get_or_create(name=READERS_GROUP)
    readers.permissions.add(*permissions.filter(codename__startswith="view_"))
    curators, _ = Group.objects.get_or_create(name=CURATORS_GROUP)
    curators.permissions.add(*permissions)


def remove_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Group.objects.filter(name=CURATORS_GROUP).delete()
    readers = Group.objects.filter(name=READERS_GROUP).first()
    if readers is not None:
        readers.permissions.remove(*_library_permissions(apps))


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("research_site", "0002_readers_group"),
        ("papers", "0004_pdfs_and_annotations"),
        ("projects", "0001_initial"),
    ]

    operations = [migrations.RunPython(create_groups, remove_groups)]

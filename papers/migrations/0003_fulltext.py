"""Full-text search index (issue 4): filled in by the search work."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("papers", "0002_assets_and_embeddings")]
    operations: list = []

"""A generation number per embedding table, for the vector index's freshness check
(papers/search/vector_index.py): a search reads one row to know whether the table changed
since its index was read, instead of counting the table's rows (about 25 ms at 95k
papers on SQLite, paid once a second).

`papers_vector_generation (name, n)` holds one number per table, set to a new random one
by triggers on every insert, update and delete of that table, in the writing
transaction: whichever process or path wrote (an embedding chunk, a stale vector
dropped, a paper deleted and its vector with it, a raw UPDATE). Random rather than
counted: a change rolled back and another committed would otherwise leave the same
number for another table state (as 0010's postings generation).

SQLite: row triggers (a write to a one-row table per row written; writers take turns
anyway). PostgreSQL: statement triggers, one write per statement; the generation row
stays locked until the writing transaction commits, so writers of vectors take turns
there too (they are short: a chunk of vectors, a paper's deletion).

A later migration that rebuilds papers_paperembedding or papers_paperstrongembedding on
SQLite drops these triggers: create them again as 0009 does for papers_paper's.
"""

from django.db import migrations

TABLES = ("papers_paperembedding", "papers_paperstrongembedding")


def _sqlite_up() -> list[str]:
    statements = [
        """CREATE TABLE IF NOT EXISTS papers_vector_generation (
            name TEXT PRIMARY KEY,
            n INTEGER NOT NULL
        )""",
    ]
    for table in TABLES:
        statements.append(
            f"INSERT OR IGNORE INTO papers_vector_generation (name, n) VALUES ('{table}', 0)"
        )
        for event in ("INSERT", "UPDATE", "DELETE"):
            statements.append(
                f"""CREATE TRIGGER IF NOT EXISTS {table}_generation_{event.lower()}
                AFTER {event} ON {table}
                BEGIN
                    UPDATE papers_vector_generation SET n = random() WHERE name = '{table}';
                END"""
            )
    return statements


def _postgresql_up() -> list[str]:
    statements = [
        """CREATE TABLE IF NOT EXISTS papers_vector_generation (
            name text PRIMARY KEY,
            n bigint NOT NULL
        )""",
        """CREATE OR REPLACE FUNCTION papers_vector_generation_bump() RETURNS trigger AS $$
        BEGIN
            UPDATE papers_vector_generation
            SET n = floor(random() * 9007199254740991)::bigint
            WHERE name = TG_TABLE_NAME;
            RETURN NULL;
        END
        $$ LANGUAGE plpgsql""",
    ]
    for table in TABLES:
        statements += [
            f"INSERT INTO papers_vector_generation (name, n) VALUES ('{table}', 0) "
            "ON CONFLICT (name) DO NOTHING",
            f"DROP TRIGGER IF EXISTS {table}_generation ON {table}",
            f"""CREATE TRIGGER {table}_generation
            AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table}
            FOR EACH STATEMENT EXECUTE FUNCTION papers_vector_generation_bump()""",
        ]
    return statements


SQLITE_UP = _sqlite_up()
POSTGRESQL_UP = _postgresql_up()


def create_schema(connection):
    """The table, its rows and the triggers (either database; nothing on another one)."""
    statements = {"sqlite": SQLITE_UP, "postgresql": POSTGRESQL_UP}.get(connection.vendor, [])
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def create(apps, schema_editor):
    create_schema(schema_editor.connection)


def drop(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor not in ("sqlite", "postgresql"):
        return
    with schema_editor.connection.cursor() as cursor:
        for table in TABLES:
            if vendor == "sqlite":
                for event in ("insert", "update", "delete"):
                    cursor.execute(f"DROP TRIGGER IF EXISTS {table}_generation_{event}")
            else:
                cursor.execute(f"DROP TRIGGER IF EXISTS {table}_generation ON {table}")
        if vendor != "sqlite":
            cursor.execute("DROP FUNCTION IF EXISTS papers_vector_generation_bump()")
        cursor.execute("DROP TABLE IF EXISTS papers_vector_generation")


class Migration(migrations.Migration):
    dependencies = [
        ("papers", "0013_author_name_prefix"),
    ]

    operations = [
        migrations.RunPython(create, drop, elidable=False),
    ]

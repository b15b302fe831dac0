"""Generations of the tables facets count, on PostgreSQL, so that `list_top_facets` knows
its cached answers are current without counting those tables (papers/search/facets.py,
`library_version`: on SQLite a bare COUNT(*) is answered from the b-tree in about a
millisecond; on PostgreSQL it reads the table, ~37 ms a cached answer at 95k papers).

`papers_table_generation (name, n)`: one number per table, set to a new random one by
every transaction that inserts or deletes its rows (or truncates it). As with the
postings' generation (0016), a constraint trigger deferred to the commit renews it once a
transaction, so writers do not take turns on the row; TRUNCATE fires a statement trigger.
Updates in place do not renew it: an edited paper's venue or year shows in the facets
after their cache's lifetime, as before.

The tables here are papers'; projects' membership table gets the same trigger from
projects migration 0018 (this app sits below projects). SQLite: nothing here.
"""

from django.db import migrations

TABLES = ("papers_paper", "papers_paperauthor", "papers_paperkeyword", "papers_papercategory")

FUNCTION = [
    """CREATE TABLE IF NOT EXISTS papers_table_generation (
        name text PRIMARY KEY,
        n bigint NOT NULL
    )""",
    """CREATE OR REPLACE FUNCTION papers_table_generation_renew() RETURNS trigger AS $$
    DECLARE
        flag text := 'research_mcp.renewed_' || TG_TABLE_NAME;
    BEGIN
        IF current_setting(flag, true) IS DISTINCT FROM 'on' THEN
            INSERT INTO papers_table_generation (name, n)
            VALUES (TG_TABLE_NAME, floor(random() * 9007199254740991)::bigint)
            ON CONFLICT (name) DO UPDATE SET n = EXCLUDED.n;
            PERFORM set_config(flag, 'on', true);
        END IF;
        RETURN NULL;
    END
    $$ LANGUAGE plpgsql""",
]


def table_triggers(table: str) -> list[str]:
    """The statements that give `table` its generation (PostgreSQL)."""
    return [
        f"INSERT INTO papers_table_generation (name, n) VALUES ('{table}', 0) "
        "ON CONFLICT (name) DO NOTHING",
        f"DROP TRIGGER IF EXISTS {table}_generation ON {table}",
        f"""CREATE CONSTRAINT TRIGGER {table}_generation AFTER INSERT OR DELETE ON {table}
        DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW EXECUTE FUNCTION papers_table_generation_renew()""",
        f"DROP TRIGGER IF EXISTS {table}_generation_truncate ON {table}",
        f"""CREATE TRIGGER {table}_generation_truncate AFTER TRUNCATE ON {table}
        FOR EACH STATEMENT EXECUTE FUNCTION papers_table_generation_renew()""",
    ]


def drop_table_triggers(table: str) -> list[str]:
    return [
        f"DROP TRIGGER IF EXISTS {table}_generation_truncate ON {table}",
        f"DROP TRIGGER IF EXISTS {table}_generation ON {table}",
        f"DELETE FROM papers_table_generation WHERE name = '{table}'",
    ]


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            for statement in FUNCTION + [s for t in TABLES for s in table_triggers(t)]:
                cursor.execute(statement)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            for table in TABLES:
                for statement in drop_table_triggers(table):
                    cursor.execute(statement)
            cursor.execute("DROP FUNCTION IF EXISTS papers_table_generation_renew()")
            cursor.execute("DROP TABLE IF EXISTS papers_table_generation")


class Migration(migrations.Migration):
    dependencies = [
        ("papers", "0016_lexical_generation_postgresql"),
    ]

    operations = [
        migrations.RunPython(create, drop, elidable=False),
    ]

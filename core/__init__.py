"""The shared base: errors, env readers, atomic writes, the knowledge-base folder, TimeStamped
and the REST error schema. Imports no app of this project; every app may import it."""

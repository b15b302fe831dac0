"""The shared base: errors, env readers, atomic writes, knowledge base, TimeStamped, REST errors.
May import Django and libraries only; every app may import it (docs/LAYERS.md)."""

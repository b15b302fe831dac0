"""The literature-review workflow: plan, search, screen, expand and
complete, with a person's decisions at checkpoints. See docs/REVIEW.md."""

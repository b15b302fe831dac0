"""The literature-review workflow (issue 6, seed 002): plan, search, screen, expand and
complete, with a person's decisions at checkpoints. See docs/REVIEW.md."""

#!/usr/bin/env bash
# Run a command with a real Celery worker beside it (needs REDIS_URL), then stop the worker.
# The worker uses the test database that pytest-django creates (test_<name>), so tasks see
# what transactional tests commit.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${REDIS_URL:?REDIS_URL must be set}"
worker_db="${DATABASE_URL:-}"
if [ -n "$worker_db" ]; then
  worker_db="${worker_db%/*}/test_${worker_db##*/}"
fi
log=$(mktemp -t celery-worker.XXXXXX.log)
DATABASE_URL="$worker_db" .venv/bin/celery -A research_site worker --loglevel=INFO \
  --concurrency=2 --queues=celery,engines --without-gossip --without-mingle >"$log" 2>&1 &
worker=$!
trap 'kill -TERM $worker 2>/dev/null; wait $worker 2>/dev/null || true' EXIT
for _ in $(seq 1 60); do
  if grep -q "ready" "$log"; then break; fi
  if ! kill -0 $worker 2>/dev/null; then cat "$log" >&2; exit 1; fi
  sleep 0.5
done
export CELERY_WORKER_RUNNING=1
"$@"

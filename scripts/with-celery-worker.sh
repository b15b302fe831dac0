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
# One worker for the default queue (prefork), and two for the `engines` queue (threads:
# engine calls wait on the network), so rate limits are shared by more than one process.
logs=()
pids=()
start_worker() {
  local log
  log=$(mktemp -t celery-worker.XXXXXX.log)
  DATABASE_URL="$worker_db" .venv/bin/celery -A research_site worker --loglevel=INFO \
    --without-gossip --without-mingle "$@" >"$log" 2>&1 &
  pids+=($!)
  logs+=("$log")
}
start_worker -n default@%h --queues=celery --concurrency=2
start_worker -n engines1@%h --queues=engines --pool=threads --concurrency=4
start_worker -n engines2@%h --queues=engines --pool=threads --concurrency=4
trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null || true' EXIT
for i in "${!pids[@]}"; do
  for _ in $(seq 1 60); do
    if grep -q "ready" "${logs[$i]}"; then break; fi
    if ! kill -0 "${pids[$i]}" 2>/dev/null; then cat "${logs[$i]}" >&2; exit 1; fi
    sleep 0.5
  done
done
export CELERY_WORKER_RUNNING=1
"$@"

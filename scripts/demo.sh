#!/usr/bin/env bash
# The main job on the embedded default engine (SQLite): install what is needed, build,
# enqueue 10,000 jobs, drain them with 4 worker processes, print the stats.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh --build-only
# A unity build (a few files compiled as one unit): scripts/test.sh measured 169 s instead of
# ~330 for its strict build this way.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON \
  -DREADPAST_BUILD_TESTS=OFF >/dev/null
cmake --build build --target readpast_cli

readpast=build/src/cli/readpast
demo_dir=$(mktemp -d /tmp/readpast-demo.XXXXXX)
export READPAST_DB="sqlite:$demo_dir/demo.db"
echo "database: $READPAST_DB"

$readpast init
start=$(date +%s%N)
seq 1 10000 | sed 's/.*/{"n": &}/' | $readpast enqueue demo --lines >/dev/null
echo "enqueued 10000 jobs in $(( ($(date +%s%N) - start) / 1000000 )) ms"

# Each job's command reads its payload from stdin; four worker processes share the file.
start=$(date +%s%N)
pids=()
for i in 1 2 3 4; do
  $readpast work demo --exec 'cat >/dev/null' --concurrency 4 --drain --worker-id "demo-$i" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
echo "drained with 4 worker processes in $(( ($(date +%s%N) - start) / 1000000 )) ms"

$readpast stats

#!/usr/bin/env bash
# Run 50: what one ftruncate of a large file costs on this machine's ext4, as SQLite's cut of
# a WAL grown by a held reader does it (PRAGMA journal_size_limit). Run as any user, in a
# directory on the file system to measure, with 40 GB free; prints one line a cut.
set -euo pipefail
file=${1:-./big}
dd if=/dev/zero of="$file" bs=4M count=9600 conv=fsync 2>/dev/null  # 37.5 GiB, synced
s=$(date +%s%N); truncate -s 64M "$file"; e=$(date +%s%N)
echo "one cut, 37.5 GiB -> 64 MiB: $(( (e - s) / 1000000 )) ms"
dd if=/dev/zero of="$file" bs=4M count=9600 conv=fsync 2>/dev/null
size=$((9600 * 4 * 1024 * 1024))
for step in 256 1024; do
  for _ in 1 2 3 4 5; do
    size=$((size - step * 1024 * 1024))
    s=$(date +%s%N); truncate -s "$size" "$file"; e=$(date +%s%N)
    echo "a step of ${step} MiB: $(( (e - s) / 1000000 )) ms"
  done
done
s=$(date +%s%N); truncate -s 64M "$file"; e=$(date +%s%N)
echo "the rest, $(( (size >> 20) - 64 )) MiB: $(( (e - s) / 1000000 )) ms"
rm -f "$file"

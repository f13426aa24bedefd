#!/usr/bin/env bash
# Run 51: append.c, 12 GiB each, without and with the page cache left behind the end,
# alternated, each after the page cache was dropped and 15 s for the kernel to hand the freed
# memory back (the state a held WAL starts from). As root, in a directory on the file system
# to measure, with 12 GiB free: bash append.sh [DIR] > append.txt
set -euo pipefail
dir=${1:-.}
here=$(cd "$(dirname "$0")" && pwd)
gcc -O2 -o "$dir/append" "$here/append.c"
for lags in "0 0" "64 192" "0 0" "64 192"; do
  rm -f "$dir/f"; sync; echo 3 > /proc/sys/vm/drop_caches; sleep 15
  echo "== lags (MiB): $lags"
  "$dir/append" "$dir/f" 12 $lags | tr '\n' ' '; echo
  free -m | sed -n 2p
done
rm -f "$dir/f" "$dir/append"

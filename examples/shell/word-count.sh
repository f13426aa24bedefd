#!/usr/bin/env bash
# word-count.sh — readpast from the shell: every file named on the command line becomes a
# job; a worker with two commands at a time counts each file's words and appends
# "<words> <file>" to counts.txt, then exits once the queue is drained.
#
#   READPAST=/path/to/readpast examples/shell/word-count.sh FILE...
#
# The job's payload (the file name) reaches the command on its stdin, never on its command
# line, so a file named '$(rm -rf ~).txt' is just a name. The command gets the job's id
# and attempt in READPAST_JOB_ID and READPAST_ATTEMPT.
set -euo pipefail
readpast=${READPAST:-readpast}
work_dir=${WORK_DIR:-$(mktemp -d)}
export READPAST_DB="sqlite:$work_dir/jobs.db"

"$readpast" init >/dev/null
printf '%s\n' "$@" | "$readpast" enqueue files --lines >/dev/null

# The handler: read the file name from stdin, count, append one line (under flock: two
# commands run at once). The name is only ever expanded inside double quotes as an
# argument, never pasted into another command line (`sh -c "... $name"` would run it).
handler='name=$(cat); words=$(wc -w < "$name"); { flock 9; printf "%s %s\n" "$words" "$name" >> counts.txt; } 9> counts.lock'
(cd "$work_dir" && "$readpast" work files --exec "$handler" --concurrency 2 --drain --no-progress -q)

"$readpast" stats files
echo "counts in $work_dir/counts.txt:"
sort -k2 "$work_dir/counts.txt"

# bench/pg_throwaway.sh — sourced by the run scripts of docs/bench-results, from the
# repository's root: starts a throwaway PostgreSQL cluster (bench/pg_server.sh) in a new
# temporary directory, sets URL to it, and destroys it when the script exits.
#   source bench/pg_throwaway.sh NAME PORT
# shellcheck shell=bash
DIR=$(mktemp -d "/tmp/${1:?a name}-XXXXXX")
chmod 755 "$DIR"  # the cluster runs as another user
cleanup() { bench/pg_server.sh destroy "$DIR/data" >/dev/null 2>&1 || true; rm -rf "$DIR"; }
trap cleanup EXIT
URL=$(bench/pg_server.sh start "$DIR/data" "${2:?a port}")

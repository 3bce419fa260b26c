#!/bin/sh
# Redis refuses writes at maxmemory under the noeviction policy: let it evict the least
# recently used keys instead. CONFIG SET changes the running server only: put the policy in
# its config file (or CONFIG REWRITE) to keep it after a restart.
# REDIS_URL: redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] (the password is passed in the
# environment, never on redis-cli's command line).
set -eu
rest=${REDIS_URL#*://}
auth=""
case $rest in *@*) auth=${rest%%@*}; rest=${rest#*@} ;; esac
hostport=${rest%%/*}
host=${hostport%:*}
port=${hostport##*:}
[ "$port" = "$hostport" ] && port=6379
user="" pass=$auth
case $auth in *:*) user=${auth%%:*}; pass=${auth#*:} ;; esac
if [ -n "$pass" ]; then export REDISCLI_AUTH="$pass"; fi
cli() {
  if [ -n "$user" ]; then redis-cli -h "$host" -p "$port" --user "$user" "$@"
  else redis-cli -h "$host" -p "$port" "$@"; fi
}
echo "before: $(cli CONFIG GET maxmemory-policy | tr '\n' ' ')"
said=$(cli CONFIG SET maxmemory-policy allkeys-lru)
[ "$said" = OK ] || { echo "Redis refused CONFIG SET: $said" >&2; exit 1; }
echo "after: $(cli CONFIG GET maxmemory-policy | tr '\n' ' ')"

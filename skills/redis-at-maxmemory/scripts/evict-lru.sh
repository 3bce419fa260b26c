#!/bin/sh
# Redis refuses writes at maxmemory under the noeviction policy: let it evict the least
# recently used keys instead. CONFIG SET changes the running server only: put the policy in
# its config file (or CONFIG REWRITE) to keep it after a restart.
set -eu
cli() { redis-cli -u "$REDIS_URL" --no-auth-warning "$@"; }
echo "before: $(cli CONFIG GET maxmemory-policy | tr '\n' ' ')"
cli CONFIG SET maxmemory-policy allkeys-lru
echo "after: $(cli CONFIG GET maxmemory-policy | tr '\n' ' ')"

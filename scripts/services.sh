#!/usr/bin/env bash
# Install the servers the connector tests start on loopback: PostgreSQL and Redis, from Debian's
# packages (tests/connectors/conftest.py runs a throwaway instance of each in a temporary directory).
# Idempotent (installs only what is missing) and quiet. It never fails the caller: where apt-get is
# not available or cannot reach its archive, it says so and the integration tests skip, naming why.
set -u
missing=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] || missing+=(redis-server)
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null 2>&1; then
    echo "services.sh: no apt-get here; install ${missing[*]} by hand (the connector tests skip without them)" >&2
    exit 0
fi
sudo=()
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo=(sudo -n); else
        echo "services.sh: not root; install ${missing[*]} as root (the connector tests skip without them)" >&2
        exit 0
    fi
fi
log=$(mktemp)
# the packages' install scripts would start system-wide servers: the tests start their own instead
policy=/usr/sbin/policy-rc.d
added_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null && "${sudo[@]}" chmod +x "$policy" && added_policy=1
fi
export DEBIAN_FRONTEND=noninteractive
if "${sudo[@]}" timeout 300 apt-get update -qq >"$log" 2>&1 &&
    "${sudo[@]}" timeout 600 apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$log" 2>&1; then
    status=0
else
    status=1
fi
[ "$added_policy" = 1 ] && "${sudo[@]}" rm -f "$policy"
if [ "$status" != 0 ]; then
    echo "services.sh: could not install ${missing[*]} with apt-get (the connector tests skip); its last lines:" >&2
    tail -n 5 "$log" >&2
fi
rm -f "$log"
exit 0

#!/usr/bin/env bash
# npm run test:pgbouncer [-- vitest files or options]: integration tests through PgBouncer in
# transaction mode, in front of the Postgres server DATABASE_URL names (default CI's machine
# Postgres). PgBouncer (Debian's `pgbouncer`) is started here on a free loopback port; the tests'
# pools go through it (test/support/testDb.ts: a role per schema, whose search_path is the
# schema), while migrations and LISTEN go straight to Postgres, as DATABASE_DIRECT_URL makes the
# broker do. Without file arguments it runs the files below: three src/main.ts instances behind
# HAProxy with DATABASE_URL through PgBouncer and DATABASE_DIRECT_URL beside it, the completion
# signal across instances, connect flows and retries on two instances, flow locks and the ledger's
# kill switch (transaction advisory locks), the sweeps, the migrations, a 2025-11-25 session.
# Exits non-zero when PgBouncer is missing or a test fails.
set -euo pipefail
cd "$(dirname "$0")/.."

DIRECT="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
PGBOUNCER="$(command -v pgbouncer || true)"
[ -n "$PGBOUNCER" ] || PGBOUNCER=/usr/sbin/pgbouncer
if [ ! -x "$PGBOUNCER" ]; then
  echo "pgbouncer is not installed (apt-get install pgbouncer)" >&2
  exit 1
fi

# host, port, user and database of DIRECT, and a free loopback port for PgBouncer.
read -r HOST PORT USER DB LISTEN < <(node -e "
  const u = new URL(process.argv[1]);
  const s = require('net').createServer().listen(0, '127.0.0.1', () => {
    const free = s.address().port;
    // One string: console.log colours a number when FORCE_COLOR is set (as CI sets it), and read would take the escapes.
    s.close(() => console.log([u.hostname, u.port || 5432, decodeURIComponent(u.username) || 'postgres', u.pathname.slice(1) || 'postgres', free].join(' ')));
  });
" "$DIRECT")

DIR="$(mktemp -d)"
chmod 755 "$DIR"
cleanup() {
  [ -f "$DIR/pgbouncer.pid" ] && kill "$(cat "$DIR/pgbouncer.pid")" 2>/dev/null || true
  rm -rf "$DIR"
  # testDb's roles whose DROP ROLE met a server connection PgBouncer still held: theirs alone
  # (test_ and 12 hex digits, as the schemas), once their schema is gone.
  node -e "
    const pg = require('pg');
    const c = new pg.Client({ connectionString: process.argv[1] });
    c.connect()
      .then(() => c.query(\"SELECT rolname FROM pg_roles WHERE rolname ~ '^test_[0-9a-f]{12}$' AND NOT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = rolname)\"))
      .then(async ({ rows }) => { for (const r of rows) await c.query('DROP ROLE ' + r.rolname).catch(() => undefined); })
      .finally(() => c.end());
  " "$DIRECT" 2>/dev/null || true
}
trap cleanup EXIT
printf '"%s" ""\n' "$USER" >"$DIR/users.txt"
cat >"$DIR/pgbouncer.ini" <<INI
[databases]
* = host=$HOST port=$PORT
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $LISTEN
unix_socket_dir =
pool_mode = transaction
; Loopback only: the roles are the tests' own (trust, as the machine's Postgres trusts loopback);
; the password of a role not in users.txt is looked up as $USER.
auth_type = trust
auth_file = $DIR/users.txt
auth_user = $USER
max_client_conn = 2000
default_pool_size = 4
max_db_connections = 40
server_idle_timeout = 5
pidfile = $DIR/pgbouncer.pid
logfile = $DIR/pgbouncer.log
INI
AS=()
# PgBouncer will not run as root.
[ "$(id -u)" -eq 0 ] && { chown -R postgres "$DIR"; AS=(-u postgres); }
"$PGBOUNCER" -d "${AS[@]}" "$DIR/pgbouncer.ini"
for _ in $(seq 1 50); do
  node -e "require('net').connect($LISTEN, '127.0.0.1').on('connect', () => process.exit(0)).on('error', () => process.exit(1))" && break
  sleep 0.1
done

FILES=("$@")
if [ "${#FILES[@]}" -eq 0 ]; then
  FILES=(
    test/scale/balancer.int.test.ts
    test/broker/completionSignal.int.test.ts
    test/broker/completionSignalWaiters.int.test.ts
    test/broker/connectFlow.int.test.ts
    test/broker/connectRetry.int.test.ts
    test/broker/siblingFlows.int.test.ts
    test/broker/flowLocks.int.test.ts
    test/broker/sweeps.int.test.ts
    test/db/migrate.int.test.ts
    test/db/pool.int.test.ts
    test/ledger/killSwitch.int.test.ts
    test/mcp/legacy/legacySdkClient.int.test.ts
  )
fi
echo "PgBouncer $("$PGBOUNCER" --version | head -1 | awk '{print $2}') in transaction mode on 127.0.0.1:$LISTEN in front of $HOST:$PORT"
status=0
DATABASE_URL="$DIRECT" DATABASE_POOLER_URL="postgres://$USER@127.0.0.1:$LISTEN/$DB" \
  npx vitest run --project int "${FILES[@]}" || status=$?
if [ "$status" -ne 0 ]; then
  echo "PgBouncer's log (last 40 lines):"
  tail -40 "$DIR/pgbouncer.log" || true
fi
exit "$status"

#!/usr/bin/env bash
# Sets up the peers of bench/peers outside the repository: a Python venv with
# tantivy, psycopg, numpy and pgserver (whose wheel ships PostgreSQL 16 with
# the pgvector extension: Debian 12 has no pgvector package), and a
# PostgreSQL server on loopback port $PGPORT with fsync and
# synchronous_commit on (their defaults), run as the postgres user.
#   bench/peers/setup.sh          # create the venv, init and start the server
#   bench/peers/setup.sh stop     # stop the server
set -euo pipefail
VENV=${PEERS_VENV:-/tmp/peervenv}
PGDATA=${PEERS_PGDATA:-/tmp/peers-pg}
PGPORT=${PEERS_PGPORT:-54329}
if [[ ! -x $VENV/bin/python ]]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q tantivy==0.27.0 pgserver==0.1.4 'psycopg[binary]==3.3.9' numpy
fi
PGBIN=$("$VENV/bin/python" -c 'import pgserver, os; print(os.path.join(os.path.dirname(pgserver.__file__), "pginstall", "bin"))')
as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
if [[ ${1:-} == stop ]]; then
  as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast stop
  exit 0
fi
if [[ ! -f $PGDATA/PG_VERSION ]]; then
  mkdir -p "$PGDATA"
  [[ $(id -u) == 0 ]] && chown postgres "$PGDATA"
  as_pg "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth=trust >/dev/null
fi
# The server runs at the harness's niceness (nice -n 5 by default, as the
# README runs the harness): on a shared machine, a server at a higher
# priority than Loci's process would get more of the cores than Loci does.
as_pg nice -n "${PEERS_NICE:-5}" "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PGDATA/log" -w start -o "-p $PGPORT -k /tmp -c listen_addresses=127.0.0.1 \
  -c fsync=on -c synchronous_commit=on -c full_page_writes=on -c shared_buffers=1GB -c max_connections=100 \
  -c max_wal_size=4GB -c maintenance_work_mem=2GB"
echo "dsn: host=127.0.0.1 port=$PGPORT user=postgres dbname=postgres"

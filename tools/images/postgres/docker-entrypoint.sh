#!/bin/sh
# The official postgres image's contract, for the variables docker-compose.yml uses:
# - started as root: prepare the data directory and run again as the `postgres` user;
# - an empty PGDATA: initdb with superuser POSTGRES_USER (default postgres) and POSTGRES_PASSWORD,
#   password (scram-sha-256) authentication for network connections, trust on the local socket,
#   listening on every address; then create POSTGRES_DB (default: the user's name) and run
#   /docker-entrypoint-initdb.d/*.sql and *.sh against it;
# - a data directory that already holds a cluster is started as it is (the variables are ignored).
set -eu
PGDATA=${PGDATA:-/var/lib/postgresql/data}
export PGDATA

if [ "$#" -eq 0 ] || [ "${1#-}" != "$1" ]; then
  set -- postgres "$@"
fi

if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA"
  chown -R postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  user=${POSTGRES_USER:-postgres}
  db=${POSTGRES_DB:-$user}
  auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$auth" != trust ]; then
    echo 'Error: the database is uninitialized and POSTGRES_PASSWORD is not set.' >&2
    echo '  Set POSTGRES_PASSWORD (or POSTGRES_HOST_AUTH_METHOD=trust to allow connections without one).' >&2
    exit 1
  fi
  pwfile=$(mktemp)
  printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pwfile"
  # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of options, split on purpose
  initdb --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host="$auth" \
    --encoding=UTF8 --locale=C.UTF-8 ${POSTGRES_INITDB_ARGS:-}
  rm -f "$pwfile"
  printf '\nhost all all all %s\n' "$auth" >>"$PGDATA/pg_hba.conf"
  printf "\nlisten_addresses = '*'\n" >>"$PGDATA/postgresql.conf"

  # A server on the local socket only while the database is created and the init scripts run.
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start
  if [ "$db" != postgres ]; then
    quoted=$(printf '%s' "$db" | sed 's/"/""/g')
    psql -v ON_ERROR_STOP=1 --no-psqlrc --username="$user" --dbname=postgres -c "CREATE DATABASE \"$quoted\""
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sql) psql -v ON_ERROR_STOP=1 --no-psqlrc --username="$user" --dbname="$db" -f "$f" ;;
      *.sh) . "$f" ;;
      *) ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop
  echo 'PostgreSQL init process complete; ready for start up.'
fi

exec "$@"

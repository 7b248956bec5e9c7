# Throwaway PostgreSQL servers for tests, in one temporary folder: sourced by bin/test-pg and
# bin/test-citus (one set of rules for finding the server programs, running them as an
# unprivileged user under root, picking ports and cleaning up).
#
#   pg_cluster_init NAME      find the programs (PG_BIN), make the folder ($PG_WORK), set the traps
#   pg_server_start NODE ...  initdb $PG_WORK/NODE, start it on 127.0.0.1 at a free port (-> $PG_PORT);
#                             further arguments are extra `-c name=value` server settings. Its settings,
#                             port included, are also written to its postgresql.conf: after a crash (a test's
#                             kill -9) `pg_ctl start -D $PG_WORK/NODE` brings it back on the same port
#   pg_as_server CMD ...      run CMD as the user the servers run as
#
# Every started server is stopped and the folder removed on exit, failure or Ctrl-C.
# The caller sets PYTHON (used to find free ports) and `set -euo pipefail`.

pg_server_bin_dir() {
    local dir
    for dir in "${PG_BIN:-}" "$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/initdb)")" \
        $(ls -d /usr/lib/postgresql/*/bin /usr/pgsql-*/bin /usr/local/opt/postgresql*/bin \
            /opt/homebrew/opt/postgresql*/bin 2>/dev/null | sort -V -r); do
        if [ -n "$dir" ] && [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && [ -x "$dir/postgres" ]; then
            echo "$dir"
            return 0
        fi
    done
    return 1
}

pg_as_server() {
    if [ -n "$PG_RUN_USER" ]; then
        setpriv --reuid="$(id -u "$PG_RUN_USER")" --regid="$(id -g "$PG_RUN_USER")" --clear-groups -- "$@"
    else
        "$@"
    fi
}

_pg_cleanup() {
    local status=$? node
    trap - EXIT INT TERM
    for node in ${PG_STARTED:-}; do
        pg_as_server "$PG_BIN/pg_ctl" -D "$PG_WORK/$node" -m immediate -w stop >/dev/null 2>&1 || true
    done
    rm -rf "$PG_WORK"
    exit "$status"
}

pg_cluster_init() {
    local name=$1
    if ! PG_BIN="$(pg_server_bin_dir)"; then
        cat >&2 <<EOF
make $name needs PostgreSQL's server programs (initdb, pg_ctl, postgres), and none were found
on PATH, in /usr/lib/postgresql/*/bin or /usr/pgsql-*/bin. Install them, for example:
    Debian, Ubuntu:  sudo apt-get install postgresql
    Fedora, RHEL:    sudo dnf install postgresql-server
    macOS:           brew install postgresql@16
or set PG_BIN to the folder that holds them. (\`make test-services\` runs the suite on a
server you already have: SERVICES_DATABASE_URL=postgres://...)
EOF
        exit 2
    fi
    # PostgreSQL refuses to run as root: as root (a container), every server command runs as
    # PG_TEST_USER (default: `postgres` if that user exists, else `nobody`).
    PG_RUN_USER=""
    if [ "$(id -u)" = 0 ]; then
        PG_RUN_USER="${PG_TEST_USER:-}"
        if [ -z "$PG_RUN_USER" ]; then
            if id postgres >/dev/null 2>&1; then PG_RUN_USER=postgres; else PG_RUN_USER=nobody; fi
        fi
    fi
    PG_WORK="$(mktemp -d "${TMPDIR:-/tmp}/wattledger-$name.XXXXXX")"
    [ -z "$PG_RUN_USER" ] || chown "$PG_RUN_USER" "$PG_WORK"
    PG_STARTED=""
    trap _pg_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

_pg_free_port() {
    "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

pg_server_start() {
    local node=$1 attempt setting settings options
    shift
    pg_as_server "$PG_BIN/initdb" --pgdata="$PG_WORK/$node" --username=postgres --auth=trust \
        --encoding=UTF8 --locale=C --no-sync >"$PG_WORK/$node-initdb.log" 2>&1 \
        || { cat "$PG_WORK/$node-initdb.log" >&2; exit 1; }
    # A port found free can be taken before the server binds it: try a few.
    for attempt in 1 2 3; do
        PG_PORT="$(_pg_free_port)"
        # Durability is not wanted from a cluster that is deleted at the end: no fsync.
        settings=(listen_addresses=127.0.0.1 "port=$PG_PORT" "unix_socket_directories=$PG_WORK" fsync=off
            synchronous_commit=off full_page_writes=off max_connections=200 "$@")
        options=()
        for setting in "${settings[@]}"; do options+=(-o "-c $setting"); done
        if pg_as_server "$PG_BIN/pg_ctl" --pgdata="$PG_WORK/$node" --log="$PG_WORK/$node.log" --wait --timeout=60 \
            "${options[@]}" start >/dev/null; then
            PG_STARTED="$PG_STARTED $node"
            _pg_settings_keep "$node" "${settings[@]}"
            return 0
        fi
        [ "$attempt" = 3 ] && { cat "$PG_WORK/$node.log" >&2; exit 1; }
    done
}

# The settings a server was started with, appended to its postgresql.conf (read at its next start only).
_pg_settings_keep() {
    local node=$1 setting
    shift
    {
        echo "# pg-cluster.sh: the settings this server was started with"
        for setting in "$@"; do echo "${setting%%=*} = '${setting#*=}'"; done
    } | pg_as_server tee -a "$PG_WORK/$node/postgresql.conf" >/dev/null
}

# psql against one of the servers (by port) as the superuser, stopping at the first error.
pg_psql() {
    local port=$1 psql_bin="$PG_BIN/psql"
    shift
    [ -x "$psql_bin" ] || psql_bin=psql
    pg_as_server "$psql_bin" --host="$PG_WORK" --port="$port" --username=postgres -v ON_ERROR_STOP=1 -qAt "$@"
}

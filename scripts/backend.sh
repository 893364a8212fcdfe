# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
# Shared by scripts/jaeger.sh and scripts/loki.sh (sourced, not run): build a
# backend from the Go module proxy once, run it in the background, stop it.
#
# The caller sets NAME (for messages), BIN, CACHE, GO, PIDFILE and LOG, and
# BIN_ENV: the name of the variable that points at a prebuilt binary.

log() { echo "$NAME.sh: $*" >&2; }

# shellcheck source=scripts/lib/cached-go-build.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/cached-go-build.sh"

# backend_build MODULE VERSION PACKAGE MINUTES [PREPARE]: build PACKAGE of
# MODULE@VERSION into $BIN, unless it is there. `go install MODULE/PACKAGE@...`
# is refused when the module's go.mod has replace directives, so the module is
# downloaded, copied somewhere writable without its vendor/ folder (stale for
# the module's own go.mod where there is one) and built there with `go build`.
# PREPARE, a function, runs in the copy before the build. No symbol or DWARF
# tables (-s -w): they only lengthen the link of these large binaries.
backend_build() {
	local module=$1 version=$2 pkg=$3 minutes=$4 prepare=${5:-}
	local reuse=0
	reuse_cached "$BIN" "$BIN_ENV" || reuse=$?
	[ "$reuse" = 1 ] || return $((reuse / 2))
	command -v "$GO" >/dev/null || { log "no Go toolchain ($GO)"; return 1; }
	mkdir -p "$CACHE"
	local start=$SECONDS
	log "downloading $module@$version from the module proxy"
	local dir
	dir=$(go_module_dir "$module@$version" "$CACHE")
	local src="$CACHE/src-$version"
	rm -rf "$src"
	mkdir -p "$src"
	log "copying $dir to $src (without vendor/)"
	(cd "$dir" && tar --exclude=./vendor -cf - .) | (cd "$src" && tar -xf -)
	chmod -R u+w "$src"
	if [ -n "$prepare" ]; then
		(cd "$src" && "$prepare")
	fi
	log "building $pkg (minutes: $minutes on 2 cores, downloads included)"
	local tmp="$BIN.tmp.$$"
	if ! (cd "$src" && GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0 "$GO" build -trimpath -ldflags="-s -w" -o "$tmp" "$pkg"); then
		rm -f "$tmp"
		log "build failed"
		return 1
	fi
	mv "$tmp" "$BIN"
	rm -rf "$src"
	log "built $BIN ($(du -h "$BIN" | cut -f1)) in $((SECONDS - start)) s"
}

backend_running() {
	[ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

# backend_start URL TIMEOUT COMMAND...: run COMMAND in the background (output
# to $LOG, pid in $PIDFILE) and wait up to TIMEOUT seconds for URL to answer.
backend_start() {
	local url=$1 timeout=$2
	shift 2
	[ -x "$BIN" ] || { log "$BIN is missing: run '$0 build' first"; return 1; }
	if backend_running; then
		log "already running (pid $(cat "$PIDFILE")), log $LOG"
		return 0
	fi
	mkdir -p "$CACHE"
	nohup "$@" >"$LOG" 2>&1 </dev/null &
	echo $! >"$PIDFILE"
	log "started pid $!, log $LOG"
	local deadline=$((SECONDS + timeout))
	until curl -fsS -o /dev/null "$url" 2>/dev/null; do
		if ! backend_running; then
			log "$NAME exited; last log lines:"
			tail -n 30 "$LOG" >&2
			rm -f "$PIDFILE"
			return 1
		fi
		if [ $SECONDS -ge "$deadline" ]; then
			log "$url not answering; last log lines:"
			tail -n 30 "$LOG" >&2
			backend_stop
			return 1
		fi
		sleep 0.2
	done
}

# backend_stop: SIGTERM the one backend_start started; SIGKILL after 20 s.
backend_stop() {
	if ! [ -f "$PIDFILE" ]; then
		log "not running"
		return 0
	fi
	local pid
	pid=$(cat "$PIDFILE")
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
		log "stopped pid $pid"
	fi
	rm -f "$PIDFILE"
}

# backend_main ARGS...: the build|start|stop|path command line; the caller
# defines build and start.
backend_main() {
	case "${1:-}" in
	build) build ;;
	start) shift; start "$@" ;;
	stop) backend_stop ;;
	path) echo "$BIN" ;;
	*)
		echo "usage: $0 build|start|stop|path" >&2
		exit 2
		;;
	esac
}

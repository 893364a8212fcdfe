#!/usr/bin/env bash
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
# Jaeger v2, built from the Go module proxy, for the end-to-end traces test.
#
#   scripts/jaeger.sh build   build .cache/jaeger/jaeger once (reused when present)
#   scripts/jaeger.sh start   start it in the background on 127.0.0.1, wait for the query API
#   scripts/jaeger.sh stop    stop the one `start` started
#   scripts/jaeger.sh path    print the binary's path
#
# `go install github.com/jaegertracing/jaeger/cmd/jaeger@...` is refused (the
# module's go.mod has replace directives), so the module is downloaded, copied
# somewhere writable without its vendor/ folder, and built there with `go build`.
#
# Environment:
#   JAEGER_CACHE        where to build and keep it (default .cache/jaeger in the repo)
#   JAEGER_BIN          use this binary instead of .cache/jaeger/jaeger (build then only checks it)
#   JAEGER_MODULE       module version to build (default v1.76.0, which is Jaeger v2.13.0)
#   JAEGER_OTLP_GRPC    OTLP gRPC listen address   (default 127.0.0.1:4317)
#   JAEGER_OTLP_HTTP    OTLP HTTP listen address   (default 127.0.0.1:4318)
#   JAEGER_QUERY_HTTP   query UI / API address     (default 127.0.0.1:16686)
#   JAEGER_QUERY_GRPC   query gRPC address         (default 127.0.0.1:16685)
#   JAEGER_START_TIMEOUT seconds `start` waits for the query API (default 60)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE="${JAEGER_CACHE:-$ROOT/.cache/jaeger}"
JAEGER_MODULE=${JAEGER_MODULE:-v1.76.0}
BIN=${JAEGER_BIN:-$CACHE/jaeger}
GO=${GO:-go}
OTLP_GRPC=${JAEGER_OTLP_GRPC:-127.0.0.1:4317}
OTLP_HTTP=${JAEGER_OTLP_HTTP:-127.0.0.1:4318}
QUERY_HTTP=${JAEGER_QUERY_HTTP:-127.0.0.1:16686}
QUERY_GRPC=${JAEGER_QUERY_GRPC:-127.0.0.1:16685}
PIDFILE="$CACHE/jaeger.pid"
LOG="$CACHE/jaeger.log"

# shellcheck source=lib/cached-go-build.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/cached-go-build.sh"

log() { echo "jaeger.sh: $*" >&2; }

build() {
	local reuse=0
	reuse_cached "$BIN" JAEGER_BIN || reuse=$?
	[ "$reuse" = 1 ] || return $((reuse / 2))
	command -v "$GO" >/dev/null || { log "no Go toolchain ($GO)"; return 1; }
	mkdir -p "$CACHE"
	local start=$SECONDS
	log "downloading github.com/jaegertracing/jaeger@$JAEGER_MODULE (Jaeger v2) from the module proxy"
	local dir
	dir=$(go_module_dir "github.com/jaegertracing/jaeger@$JAEGER_MODULE" "$CACHE")
	# The module cache is read-only and its vendor/ folder is stale for the
	# module's own go.mod: build a writable copy without it.
	local src="$CACHE/src-$JAEGER_MODULE"
	rm -rf "$src"
	mkdir -p "$src"
	log "copying $dir to $src (without vendor/)"
	(cd "$dir" && tar --exclude=./vendor -cf - .) | (cd "$src" && tar -xf -)
	chmod -R u+w "$src"
	log "building ./cmd/jaeger (minutes: 5 to 11 on 2 cores, downloads included)"
	local tmp="$BIN.tmp.$$"
	if ! (cd "$src" && GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0 "$GO" build -trimpath -o "$tmp" ./cmd/jaeger); then
		rm -f "$tmp"
		log "build failed"
		return 1
	fi
	mv "$tmp" "$BIN"
	rm -rf "$src"
	log "built $BIN ($(du -h "$BIN" | cut -f1)) in $((SECONDS - start)) s"
}

running() {
	[ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

start() {
	[ -x "$BIN" ] || { log "$BIN is missing: run '$0 build' first"; return 1; }
	if running; then
		log "already running (pid $(cat "$PIDFILE")), log $LOG"
		return 0
	fi
	mkdir -p "$CACHE"
	# With no --config Jaeger v2 runs its built-in all-in-one configuration
	# (memory storage, kept here explicitly). The query extension listens on
	# all interfaces by default and the rest on ${JAEGER_LISTEN_HOST:-localhost}:
	# all are put on 127.0.0.1. Only OTLP in, storage and the query API/UI are
	# kept: the Jaeger/Zipkin receivers, sampling, health, expvar and zpages
	# extensions stay off, and so do Jaeger's own metrics on :8888, where the
	# collector serves its own. Extra arguments to `start` are passed on.
	JAEGER_LISTEN_HOST=127.0.0.1 nohup "$BIN" \
		--set=receivers.otlp.protocols.grpc.endpoint="$OTLP_GRPC" \
		--set=receivers.otlp.protocols.http.endpoint="$OTLP_HTTP" \
		--set=extensions.jaeger_query.http.endpoint="$QUERY_HTTP" \
		--set=extensions.jaeger_query.grpc.endpoint="$QUERY_GRPC" \
		--set='service.pipelines.traces.receivers=[otlp]' \
		--set='service.extensions=[jaeger_storage,jaeger_query]' \
		--set=extensions.jaeger_storage.backends.some_storage.memory.max_traces=100000 \
		--set=service.telemetry.metrics.level=none \
		"$@" >"$LOG" 2>&1 </dev/null &
	echo $! >"$PIDFILE"
	log "started pid $!, log $LOG"
	local deadline=$((SECONDS + ${JAEGER_START_TIMEOUT:-60}))
	until curl -fsS -o /dev/null "http://$QUERY_HTTP/api/v3/services" 2>/dev/null; do
		if ! running; then
			log "jaeger exited; last log lines:"
			tail -n 30 "$LOG" >&2
			rm -f "$PIDFILE"
			return 1
		fi
		if [ $SECONDS -ge $deadline ]; then
			log "query API http://$QUERY_HTTP not answering; last log lines:"
			tail -n 30 "$LOG" >&2
			stop
			return 1
		fi
		sleep 0.2
	done
	log "ready: OTLP gRPC $OTLP_GRPC, OTLP HTTP $OTLP_HTTP, UI/API http://$QUERY_HTTP"
}

stop() {
	if ! [ -f "$PIDFILE" ]; then
		log "not running"
		return 0
	fi
	local pid
	pid=$(cat "$PIDFILE")
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
		log "stopped pid $pid"
	fi
	rm -f "$PIDFILE"
}

case "${1:-}" in
build) build ;;
start) shift; start "$@" ;;
stop) stop ;;
path) echo "$BIN" ;;
*)
	echo "usage: $0 build|start|stop|path" >&2
	exit 2
	;;
esac

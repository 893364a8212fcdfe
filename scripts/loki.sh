#!/usr/bin/env bash
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
# Grafana Loki (single binary), built from the Go module proxy, for the
# end-to-end logs test (test/e2e/loki_test.go) and config/loki.yaml.
#
#   scripts/loki.sh build   build $LOKI_CACHE/loki once (reused when present)
#   scripts/loki.sh start   start it in the background on 127.0.0.1, wait for /ready
#   scripts/loki.sh stop    stop the one `start` started
#   scripts/loki.sh path    print the binary's path
#
# It runs with scripts/loki.yaml (filesystem storage, in-memory rings, schema
# v13 TSDB, structured metadata; the OTLP mapping is described there).
#
# `go install github.com/grafana/loki/v3/cmd/loki@...` is refused (the module's
# go.mod has replace directives), so the module is downloaded, copied somewhere
# writable and built there with `go build` (scripts/backend.sh). Its module
# zip lacks pkg/push, a nested module that go.mod replaces with ./pkg/push:
# that replace is dropped, and pkg/push comes from the module proxy at the
# version go.mod requires.
#
# Environment:
#   LOKI_CACHE          where to build and keep it (default ~/.cache/otelcol-seq/loki)
#   LOKI_BIN            use this binary instead of $LOKI_CACHE/loki (build then only checks it)
#   LOKI_MODULE         module version to build (default v3.7.8)
#   LOKI_HTTP_PORT      HTTP port on 127.0.0.1: OTLP in (/otlp/v1/logs), LogQL API (default 3100)
#   LOKI_GRPC_PORT      gRPC port on 127.0.0.1 (default 9095)
#   LOKI_DIR            where Loki keeps chunks, index and WAL (default $LOKI_CACHE/data,
#                       which `start` empties: each start begins with no logs)
#   LOKI_START_TIMEOUT  seconds `start` waits for /ready (default 120)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE="${LOKI_CACHE:-$HOME/.cache/otelcol-seq/loki}"
LOKI_MODULE=${LOKI_MODULE:-v3.7.8}
BIN=${LOKI_BIN:-$CACHE/loki}
GO=${GO:-go}
export LOKI_HTTP_PORT=${LOKI_HTTP_PORT:-3100}
export LOKI_GRPC_PORT=${LOKI_GRPC_PORT:-9095}
DEFAULT_DIR=$CACHE/data
export LOKI_DIR=${LOKI_DIR:-$DEFAULT_DIR}
PIDFILE="$CACHE/loki.pid"
LOG="$CACHE/loki.log"

NAME=loki
BIN_ENV=LOKI_BIN
# shellcheck source=scripts/backend.sh
. "$ROOT/scripts/backend.sh"

# The module zip lacks pkg/push, a nested module that go.mod replaces with
# ./pkg/push: the proxy's copy, at the version go.mod requires, serves.
drop_push_replace() {
	if [ ! -d pkg/push ]; then
		"$GO" mod edit -dropreplace=github.com/grafana/loki/pkg/push
	fi
}

build() {
	backend_build github.com/grafana/loki/v3 "$LOKI_MODULE" ./cmd/loki "about 4" drop_push_replace
}

start() {
	if [ "$LOKI_DIR" = "$DEFAULT_DIR" ]; then
		rm -rf "$DEFAULT_DIR"
	fi
	mkdir -p "$LOKI_DIR"
	# /ready answers 503 until the ingester has joined its ring (seconds).
	# Extra arguments to `start` are passed on (-log.level=debug, ...).
	local url="http://127.0.0.1:$LOKI_HTTP_PORT"
	backend_start "$url/ready" "${LOKI_START_TIMEOUT:-120}" \
		"$BIN" -config.file="$ROOT/scripts/loki.yaml" -config.expand-env=true "$@"
	log "ready: OTLP logs $url/otlp/v1/logs, LogQL $url/loki/api/v1/query_range, data $LOKI_DIR"
}

backend_main "$@"

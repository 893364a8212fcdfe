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
# somewhere writable without its vendor/ folder, and built there with `go build`
# (scripts/backend.sh).
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

NAME=jaeger
BIN_ENV=JAEGER_BIN
# shellcheck source=scripts/backend.sh
. "$ROOT/scripts/backend.sh"

build() {
	backend_build github.com/jaegertracing/jaeger "$JAEGER_MODULE" ./cmd/jaeger "about 3"
}

start() {
	# With no --config Jaeger v2 runs its built-in all-in-one configuration
	# (memory storage, kept here explicitly). The query extension listens on
	# all interfaces by default and the rest on ${JAEGER_LISTEN_HOST:-localhost}:
	# all are put on 127.0.0.1. Only OTLP in, storage and the query API/UI are
	# kept: the Jaeger/Zipkin receivers, sampling, health, expvar and zpages
	# extensions stay off, and so do Jaeger's own metrics on :8888, where the
	# collector serves its own. Extra arguments to `start` are passed on.
	JAEGER_LISTEN_HOST=127.0.0.1 backend_start "http://$QUERY_HTTP/api/v3/services" "${JAEGER_START_TIMEOUT:-60}" \
		"$BIN" \
		--set=receivers.otlp.protocols.grpc.endpoint="$OTLP_GRPC" \
		--set=receivers.otlp.protocols.http.endpoint="$OTLP_HTTP" \
		--set=extensions.jaeger_query.http.endpoint="$QUERY_HTTP" \
		--set=extensions.jaeger_query.grpc.endpoint="$QUERY_GRPC" \
		--set='service.pipelines.traces.receivers=[otlp]' \
		--set='service.extensions=[jaeger_storage,jaeger_query]' \
		--set=extensions.jaeger_storage.backends.some_storage.memory.max_traces=100000 \
		--set=service.telemetry.metrics.level=none \
		"$@"
	log "ready: OTLP gRPC $OTLP_GRPC, OTLP HTTP $OTLP_HTTP, UI/API http://$QUERY_HTTP"
}

backend_main "$@"

# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
# Sourced by the scripts that build a third-party binary from the Go module
# proxy once and keep it in a cache (backend.sh for jaeger.sh and loki.sh; ebpf-exporter.sh). The
# sourcing script defines log and GO.

# reuse_cached BIN VAR: 0 when BIN is there to use; 1 when it is to be
# built; 2 when $VAR named a binary that is not there (nothing to build).
reuse_cached() {
	local bin=$1 var=$2
	if [ -x "$bin" ]; then
		log "using $bin"
		return 0
	fi
	if [ -n "${!var:-}" ]; then
		log "$var=${!var} is not an executable file"
		return 2
	fi
	return 1
}

# go_module_dir MODULE@VERSION WORKDIR: downloads the module (from WORKDIR,
# outside any module) and prints the directory of its read-only copy.
go_module_dir() {
	local dir
	dir=$(cd "$2" && GOFLAGS=-mod=mod "$GO" mod download -json "$1" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
	if [ -z "$dir" ] || [ ! -f "$dir/go.mod" ]; then
		log "downloading $1 failed"
		return 1
	fi
	echo "$dir"
}

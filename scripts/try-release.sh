#!/usr/bin/env bash
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
#
# Does the whole distribution resolve at another collector release? (How the
# pin in builder-config.yaml is chosen and kept current: see its header.)
#
#   scripts/try-release.sh CORE STABLE CONTRIB [K8SATTRIBUTES]
#   e.g. scripts/try-release.sh v0.165.0 v1.71.0 v0.165.1 v1.4.1
#
# Writes builder-config.yaml with every collector module moved to that release
# (core v0.x modules to CORE, core v1.x modules to STABLE, contrib modules to
# CONTRIB, the k8sattributes processor, versioned v1.x since contrib v0.161.0,
# to K8SATTRIBUTES; the replaces kept, this repository's module taken from the
# working tree), and runs that release's ocb on it without compiling: ocb's
# `go mod tidy` then meets every module the components and their tests import.
# Prints each module version the module proxy does not serve with the
# component that needs it, or says that everything resolved; BUILD=1 compiles
# too. Exit status 0 only when everything resolved (and built).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 3 ]; then
	sed -n '8,9p' "$0" | sed 's/^# *//' >&2
	exit 2
fi
core=$1 stable=$2 contrib=$3 k8sattr=${4:-$3}
GO=${GO:-go}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

GOBIN=$work/bin $GO install "go.opentelemetry.io/collector/cmd/builder@$core"

repo=$(pwd)
c=github.com/open-telemetry/opentelemetry-collector-contrib
sed -E \
	-e "s#^(  output_path:).*#\1 $work/dist#" \
	-e "s#^(  - github.com/otelcol-seq/otelcol-seq =>).*#\1 $repo#" \
	-e "s#(gomod: $c/[^ ]+) v0\.[0-9.]+#\1 $contrib#" \
	-e "s#(gomod: go\.opentelemetry\.io/collector/[^ ]+) v0\.[0-9.]+#\1 $core#" \
	-e "s#(gomod: go\.opentelemetry\.io/collector/[^ ]+) v1\.[0-9.]+#\1 $stable#" \
	-e "s#(gomod: $c/processor/k8sattributesprocessor) v[0-9.]+#\1 $k8sattr#" \
	builder-config.yaml >"$work/builder-config.yaml"

skip=--skip-compilation outcome="resolved (not compiled)"
if [ "${BUILD:-0}" = 1 ]; then skip='' outcome="resolved and built"; fi
release="$core / $stable, contrib $contrib (k8sattributes $k8sattr)"
# go reports each refused module as "go: <main> imports / <component's
# package> imports|tested by / ... / <package>: <module@version>: reading
# <url>: <status>" (or, for a component's own module, "go: <module@version>:
# reading ..."), and a Go too old as "go: <module@version> requires go >= X".
# A component whose own module cannot be had stops go before it looks at the
# others: it is left out of the manifest and ocb runs again, so that one run
# names everything that blocks the release.
blocked=0
while ! "$work/bin/builder" --config "$work/builder-config.yaml" $skip >"$work/log" 2>&1; do
	blocked=1
	report=$(awk -v c="$c/" '
		/^go: .* imports$/ { chain = ""; test = ""; next }
		/^\t/ && chain == "" && (/ imports$/ || / tested by$/) {
			chain = $1; if (/ tested by$/) test = " (by its tests)"; next
		}
		/: reading https?:/ {
			match($0, /[^ \t]+@v[^ :]+: reading/); mv = substr($0, RSTART, RLENGTH - 9)
			status = $0; sub(/.*: /, "", status)
			if (chain == "") { chain = "(the component itself)"; split(mv, m, "@"); print "DROP " m[1] }
			sub(c, "contrib/", chain); sub(c, "contrib/", mv)
			line = sprintf("  %-55s needs %s: %s%s", chain, mv, status, test)
			if (!(line in seen)) { seen[line] = 1; print line }
			chain = ""; test = ""
		}
		/^go: [^ ]+@v[^ ]+ requires go >= / {
			split($2, m, "@"); print "DROP " m[1]
			sub(/^go: /, ""); sub(c, "contrib/"); print "  " $0
		}
	' "$work/log")
	if [ -z "$report" ]; then
		echo "try-release: $release failed:"
		grep -vE '^\s*(go: downloading|.*\bINFO\b)' "$work/log" | tail -40
		exit 1
	fi
	echo "$report" | grep -v '^DROP '
	drop=$(echo "$report" | sed -n 's/^DROP //p')
	[ -n "$drop" ] || break
	for m in $drop; do
		echo "  (left out $m to look at the rest)"
		sed -i "\#gomod: $m #d" "$work/builder-config.yaml"
	done
done
if [ "$blocked" = 1 ]; then
	echo "try-release: $release does not resolve (above: what the module proxy refuses)"
	exit 1
fi
echo "try-release: $release: everything $outcome"

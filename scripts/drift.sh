#!/usr/bin/env bash
# The drift check (make drift; make test runs it): regenerates everything
# generated that is committed (bpf2go objects and bindings, the ebpf_exporter
# objects, mdatagen's code and README status blocks) with the pinned
# generators (clang 14 of Debian 12, mdatagen of the Makefile) and fails if
# the tree then differs from what is committed: the sources and what was
# built from them must not drift apart. Run it on a clean tree: it leaves the
# regenerated files in place for `git diff` to show.
set -euo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
	echo "drift: the tree has uncommitted changes; commit or stash them first (the check compares against HEAD)" >&2
	exit 2
fi
$MAKE --no-print-directory generate >/dev/null
changed=$(git status --porcelain)
if [ -n "$changed" ]; then
	echo "drift: regenerating changed what is committed:" >&2
	echo "$changed" >&2
	git --no-pager diff --stat >&2
	echo "drift: run 'make generate' and commit the result with its sources (clang 14: $(command -v clang-14 || echo missing))" >&2
	exit 1
fi
echo "drift: generated code and objects equal what their sources give"

#!/usr/bin/env bash
# The modules check (make lint): go.work joins this repository's modules for
# development, and in it the go command would build with requirements that a
# module's own go.mod lacks. Users' and ocb's builds read each module alone,
# so each go.mod and go.sum must be tidy without the workspace (GOWORK=off),
# and go.work must use every module but tools/ (its own, outside it).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
failed=0
mapfile -t modules < <(find . -name go.mod -not -path './build/*' -not -path './.tools/*' -printf '%h\n' | sort)
used=$($GO work edit -json | sed -n 's/.*"DiskPath": "\(.*\)".*/\1/p' | sort)
for m in "${modules[@]}"; do
	if [ "$m" != ./tools ] && ! grep -qxF "$m" <<<"$used"; then
		echo "tidy: go.work does not use $m" >&2
		failed=1
	fi
	if ! (cd "$m" && GOWORK=off $GO mod tidy -diff); then
		echo "tidy: $m/go.mod or go.sum is not tidy: (cd $m && GOWORK=off go mod tidy)" >&2
		failed=1
	fi
done
((failed == 0)) || exit 1
echo "tidy: ${#modules[@]} modules tidy on their own, go.work uses all but tools"

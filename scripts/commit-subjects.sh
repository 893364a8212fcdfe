#!/usr/bin/env bash
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
#
# Fails when a commit subject is longer than MAX characters, so that
# `git log --oneline` shows whole subjects; the detail goes in the body,
# after a blank line. Part of `make lint`.
#
# Only the commits after BASE are checked, and those reachable from HEAD:
# the history before it has subjects of up to several hundred characters,
# left as they are. Where there is no history to read (a tarball, a shallow
# clone without BASE) the check says so and passes.
#
#   scripts/commit-subjects.sh [REV]    check BASE..REV (default HEAD)
set -euo pipefail

# BASE: main's head when the check came in (issue 35), the last commit
# whose subject may be long. Never move it forward: the commits after it
# are all checked.
BASE=52c92a587dee0d170e6afa5b7db46459b8038b27
MAX=72

rev=${1:-HEAD}
cd "$(dirname "$0")/.."

skip() {
	echo "commit-subjects: skipped: $*"
	exit 0
}

# This tree's own history: a tarball unpacked inside another clone has none.
[ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ] || skip "not a git clone (no history to read)"
git rev-parse --verify -q "$rev^{commit}" >/dev/null || skip "$rev is not a commit here"
git cat-file -e "$BASE^{commit}" 2>/dev/null ||
	skip "the history does not reach $BASE (a shallow clone? git fetch --unshallow to check)"
git merge-base --is-ancestor "$BASE" "$rev" ||
	skip "$rev does not descend from $BASE (an older branch): nothing after it to check"

# Characters, not bytes: a subject may hold UTF-8 (µs, ×).
export LC_ALL=C.UTF-8
bad=0
n=0
while IFS=' ' read -r hash subject; do
	n=$((n + 1))
	if [ "${#subject}" -gt "$MAX" ]; then
		bad=$((bad + 1))
		echo "commit-subjects: ${hash:0:12}: subject is ${#subject} characters, over $MAX:"
		echo "    $subject"
	fi
done < <(git log --format='%H %s' "$BASE..$rev")

if [ "$bad" -gt 0 ]; then
	cat <<EOF
commit-subjects: $bad of $n commits after ${BASE:0:12} have subjects over $MAX characters.
  Fix: reword each before it reaches main (git rebase -i ${BASE:0:12}, 'reword'), keeping
  the subject to one line of $MAX characters or less and moving the detail to the body,
  after a blank line. A commit whose message has no blank line after its first line
  has its whole first paragraph as its subject.
EOF
	exit 1
fi
echo "commit-subjects: $n commits after ${BASE:0:12}, every subject $MAX characters or less"

#!/usr/bin/env bash
# Copyright The otelcol-seq Authors
# SPDX-License-Identifier: Apache-2.0
# A Kubernetes control plane (kube-apiserver, etcd), kubectl and a kubelet,
# built from the Go module proxy once, for the end-to-end Kubernetes test
# (test/e2e/k8s_test.go, `make test-k8s`).
#
#   scripts/k8s.sh build   build the four binaries once into $K8S_CACHE/bin (reused when complete)
#   scripts/k8s.sh path    print the bin directory
#   scripts/k8s.sh node    install (apt, as root) what the kubelet's node needs:
#                          containerd, runc and the CNI plugins (Debian's)
#
# k8s.io/kubernetes cannot be built with `go install ...@version`: its go.mod
# requires the staging modules at v0.0.0 and replaces them with
# ./staging/src/k8s.io/*. A throwaway module requires k8s.io/kubernetes at
# $K8S_VERSION and points those replaces at the published k8s.io/* modules of
# the same release (v0.MINOR.PATCH), and one `go build` compiles
# kube-apiserver, kubectl, kubelet and etcd (go.etcd.io/etcd/server/v3, the version
# k8s.io/apiserver requires: 3.7.0 for v1.37.2), so the packages they share
# compile once. Two staging modules are left out of the replaces:
# sample-cli-plugin and sample-controller (not required by kubernetes, and not
# served by the module proxy at v0.37.2).
#
# Cold build, measured on a 2-core machine shared with other builds: 516 s
# wall, 462 CPU-seconds (module downloads included; the Go build cache
# already held what the collector shares with it); with an empty Go build
# cache 567 CPU-seconds, 1601 s wall while the machine's load was about 12.
# The kubelet adds 167 CPU-seconds (222 s wall at a load of about 25) to a
# build whose Go build cache already holds kube-apiserver's packages.
#
# Environment:
#   K8S_VERSION  the k8s.io/kubernetes release (default v1.37.2)
#   K8S_CACHE    where to build and keep it (default ~/.cache/otelcol-seq/k8s/$K8S_VERSION)
#   GO           the Go toolchain (default go)
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
CACHE=${K8S_CACHE:-$HOME/.cache/otelcol-seq/k8s/$K8S_VERSION}
GO=${GO:-go}
BINDIR=$CACHE/bin
MARKER=$CACHE/.complete

log() { echo "k8s.sh: $*" >&2; }

STAGING="api apiextensions-apiserver apimachinery apiserver cli-runtime client-go
cloud-provider cluster-bootstrap code-generator component-base component-helpers
controller-manager cri-api cri-client cri-streaming csi-translation-lib
dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator
kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
mount-utils pod-security-admission sample-apiserver streaming"

build() {
	# A cache completed before the kubelet was added lacks it: rebuild.
	if [ -f "$MARKER" ] && [ -x "$BINDIR/kubelet" ]; then
		log "using $BINDIR ($(cat "$MARKER"))"
		return 0
	fi
	command -v "$GO" >/dev/null || { log "no Go toolchain ($GO)"; return 1; }
	local v=${K8S_VERSION#v} major minor patch
	IFS=. read -r major minor patch <<<"$v"
	local staging="v0.$minor.$patch" src="$CACHE/src" start=$SECONDS
	rm -rf "$src" "$BINDIR"
	mkdir -p "$src" "$BINDIR"
	{
		echo "module example.com/k8sbuild"
		echo
		echo "go 1.26.0"
		echo
		echo "require k8s.io/kubernetes $K8S_VERSION"
		echo
		echo "replace ("
		for m in $STAGING; do
			printf '\tk8s.io/%s => k8s.io/%s %s\n' "$m" "$m" "$staging"
		done
		echo ")"
	} >"$src/go.mod"
	log "building kube-apiserver, kubectl, kubelet and etcd $K8S_VERSION (staging $staging) into $BINDIR (cold: 9 to 27 min on 2 cores, downloads included)"
	local ldflags="-s -w"
	for kv in "gitVersion=$K8S_VERSION" "gitMajor=$major" "gitMinor=$minor" gitTreeState=clean; do
		ldflags="$ldflags -X k8s.io/component-base/version.$kv"
	done
	if ! (cd "$src" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 "$GO" build -trimpath -ldflags="$ldflags" -o "$BINDIR/" \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl k8s.io/kubernetes/cmd/kubelet \
		go.etcd.io/etcd/server/v3); then
		log "build failed"
		return 1
	fi
	# cmd/go names go.etcd.io/etcd/server/v3's binary after "server" (it drops /v3).
	mv "$BINDIR/server" "$BINDIR/etcd"
	local etcd
	etcd=$(cd "$src" && GOWORK=off GOFLAGS=-mod=mod "$GO" list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
	"$BINDIR/kube-apiserver" --version >&2
	"$BINDIR/kubectl" version --client >&2
	"$BINDIR/kubelet" --version >&2
	"$BINDIR/etcd" --version >&2
	rm -rf "$src"
	echo "kubernetes $K8S_VERSION etcd $etcd built in $((SECONDS - start)) s" >"$MARKER"
	log "built: $(cat "$MARKER")"
}

# node installs Debian's containerd, runc and CNI plugins when missing (the
# e2e test's kubelet runs pods with them: test/e2e/kubelet_test.go).
node() {
	local missing="" p
	for p in containerd runc containernetworking-plugins; do
		dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	log "installing:$missing"
	apt-get update -qq
	# shellcheck disable=SC2086 # one word per package
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
}

case "${1:-}" in
build) build ;;
node) node ;;
path) echo "$BINDIR" ;;
*)
	echo "usage: $0 build|path|node" >&2
	exit 2
	;;
esac

# otelcol-seq: the two commands users need are `make run` and `make test`.
# Both install what they need on a fresh Debian machine (run as root).

SHELL := /bin/bash
GO ?= go
TOOLS := $(CURDIR)/.tools
BUILDER := $(TOOLS)/builder
MDATAGEN := $(TOOLS)/mdatagen
# The collector release of builder-config.yaml (its header says how the pin is
# chosen; scripts/try-release.sh says whether a newer release resolves).
OCB_VERSION := v0.161.0
# mdatagen v0.161.0 needs internal/schemagen v0.161.0, which the module proxy
# refuses; v0.159.0 is the newest whose whole build is served. Generated code is committed.
MDATAGEN_VERSION := v0.159.0
COLLECTOR := bin/otelcol-seq
# Jaeger v2, built from the Go module proxy for the traces e2e test (scripts/jaeger.sh).
# Kept outside the clone so that later clones (CI) reuse it.
JAEGER_CACHE ?= $(HOME)/.cache/otelcol-seq/jaeger
JAEGER := $(JAEGER_CACHE)/jaeger
# Grafana Loki, likewise (scripts/loki.sh), for the logs e2e test: about 4
# minutes to build cold on 2 cores, then reused.
LOKI_CACHE ?= $(HOME)/.cache/otelcol-seq/loki
LOKI := $(LOKI_CACHE)/loki
# Cloudflare's ebpf_exporter v2.5.1 (static, libbpf 1.5) for the side-by-side
# parity test (scripts/ebpf-exporter.sh), outside the clone for the same reason.
EBPF_EXPORTER_VERSION := v2.5.1
EBPF_EXPORTER_CACHE ?= $(HOME)/.cache/otelcol-seq/ebpf_exporter/$(EBPF_EXPORTER_VERSION)
EBPF_EXPORTER := $(EBPF_EXPORTER_CACHE)/ebpf_exporter
# Its upstream examples/, compiled, for TestEbpfExporterParityUpstream.
EBPF_EXPORTER_EXAMPLES := $(EBPF_EXPORTER_CACHE)/examples/.done
# Kubernetes (kube-apiserver, etcd and kubectl of one release) for the
# control-plane e2e test (scripts/k8s.sh, make test-k8s), likewise.
K8S_VERSION := v1.37.2
K8S_CACHE ?= $(HOME)/.cache/otelcol-seq/k8s/$(K8S_VERSION)
K8S := $(K8S_CACHE)/.complete
CONFIG ?= config/default.yaml
APT_PACKAGES := stress-ng bpftool bpftrace debootstrap iptables gcc

GO_SOURCES := $(shell find receiver connector internal -name '*.go' -not -name '*_test.go') $(shell find receiver internal -name '*.o')

# Go modules: the root one (shared code under internal/ and test/) and one per
# component (receiver/*, connector/*, each requiring the root one), versioned
# together at v0.0.0 and tied to this tree by replace directives; go.work makes
# them one workspace. `./...` names only the root module's packages (the go
# command does not descend into nested modules, workspace or not): PKGS names
# every package of every module, as directories (golangci-lint takes no import
# path patterns). tools/ is a module outside the workspace (TOOLS_GO), as is
# ocb's build/otelcol-seq (GOWORK=off for both).
COMPONENT_MODULES := $(patsubst %/go.mod,%,$(wildcard receiver/*/go.mod connector/*/go.mod))
PKGS := ./... $(addprefix ./,$(addsuffix /...,$(COMPONENT_MODULES)))
MODULE_FILES := go.mod go.sum go.work $(foreach m,$(COMPONENT_MODULES),$(m)/go.mod $(m)/go.sum)
TOOLS_GO := GOWORK=off $(GO) -C tools

# Debian 13's and unstable's bpftrace, each in a minimal debootstrap chroot
# (scripts/bpftrace-chroot.sh), for the bpftrace version matrix; outside the
# clone so that later clones (CI) reuse them.
BPFTRACE_CHROOTS ?= $(HOME)/.cache/otelcol-seq/bpftrace
BPFTRACE_SUITES := trixie sid

# Kernels for the kernel test matrix (scripts/kernels.sh, test/kernels),
# outside the clone for the same reason.
KERNELS_CACHE ?= $(HOME)/.cache/otelcol-seq/kernels

.PHONY: run test build deps tools generate unit e2e test-attack clean lint drift test-kernels test-bpftrace-versions test-k8s test-parity-upstream test-kubelet

run: deps $(COLLECTOR)
	$(COLLECTOR) --config $(CONFIG)

# The whole suite: unit tests (pure Go, race detector), kernel integration tests
# (they need root: CI runs as root, and they never skip there), end-to-end
# tests of the built collector, and the kernel integration tests again inside
# other kernels (test-kernels).
test: deps $(COLLECTOR) jaeger loki ebpf-exporter python-grpc lint drift unit fuzz-short test-bpftrace-versions e2e test-user-manifest test-k8s test-kernels

# OTHER_ARCH: amd64 on arm64, else arm64; vetting its build keeps both building.
OTHER_ARCH := $(if $(filter arm64,$(shell $(GO) env GOARCH)),amd64,arm64)

# EBPF_EXPORTER_BIN, where built: the ebpfexporter package compares its
# kprobe/fentry fixtures with ebpf_exporter where the kernel runs them.
unit:
	$(GO) vet $(PKGS)
	$(TOOLS_GO) vet ./...
	GOARCH=$(OTHER_ARCH) $(GO) vet $(PKGS)
	EBPF_EXPORTER_BIN=$(wildcard $(EBPF_EXPORTER)) $(GO) test -race -count=1 $(PKGS)
	$(TOOLS_GO) test -race -count=1 ./...

# Every fuzz target (scripts/fuzz.sh): each for 60 s under `make fuzz`, 5 s in
# `make test` (the seed corpora also run as plain tests in `unit`).
FUZZTIME ?= 60s
.PHONY: fuzz fuzz-short
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

fuzz-short:
	GO=$(GO) FUZZTIME=5s FUZZMINIMIZETIME=1s scripts/fuzz.sh

# The e2e tests, TestEbpfExporterParityUpstream among them (ebpf_exporter's
# upstream examples, compiled once into the cache: docs/parity.md).
e2e: $(COLLECTOR) $(JAEGER) $(LOKI) $(EBPF_EXPORTER) $(EBPF_EXPORTER_EXAMPLES)
	@mkdir -p build
	set -o pipefail; OTELCOL_SEQ_BIN=$(CURDIR)/$(COLLECTOR) JAEGER_BIN=$(JAEGER) LOKI_BIN=$(LOKI) EBPF_EXPORTER_BIN=$(EBPF_EXPORTER) \
		EBPF_EXPORTER_CACHE=$(EBPF_EXPORTER_CACHE) $(GO) test -tags e2e -count=1 -v ./test/e2e/... 2>&1 | tee build/e2e.log \
		|| { scripts/test-recap.sh build/e2e.log; exit 1; }

# The drop-in's parity on ebpf_exporter's own upstream examples alone (root).
test-parity-upstream: $(COLLECTOR) $(EBPF_EXPORTER) $(EBPF_EXPORTER_EXAMPLES)
	OTELCOL_SEQ_BIN=$(CURDIR)/$(COLLECTOR) EBPF_EXPORTER_BIN=$(EBPF_EXPORTER) EBPF_EXPORTER_CACHE=$(EBPF_EXPORTER_CACHE) \
		$(GO) test -tags e2e -count=1 -v -run '^TestEbpfExporterParityUpstream$$' ./test/e2e/

# The attack suite alone (root; test/e2e/attack_test.go, also part of e2e):
# the built collector under the shipped agent and grpc configs against what
# an unprivileged local user can do (docs/tests.md, "The attack suite").
test-attack: $(COLLECTOR)
	OTELCOL_SEQ_BIN=$(CURDIR)/$(COLLECTOR) $(GO) test -tags e2e -count=1 -v -timeout 15m -run '^TestAttack$$' ./test/e2e/

# A user's own collector (root; test/e2e/usermanifest_test.go, build tag
# usermanifest): their ocb manifest at this release with contrib's filelog
# receiver, core's otlp exporter and the seq and bpftrace receivers by their
# module paths, built by ocb (a minute or three warm) and run.
.PHONY: test-user-manifest
test-user-manifest: deps $(BUILDER)
	OCB_BIN=$(BUILDER) $(GO) test -tags e2e,usermanifest -count=1 -v -timeout 15m -run '^TestUserManifest$$' ./test/e2e/

# The bpftrace version matrix (root): the same scripts under the receiver's
# runner on Debian 12's bpftrace (0.17, the host's), Debian 13's (0.23) and
# unstable's (0.27), the latter two from Debian's packages in chroots built
# once into $(BPFTRACE_CHROOTS) (about two minutes cold); prints what each
# version gave (build/bpftrace-versions.md) and fails where they differ.
test-bpftrace-versions: deps
	@for s in $(BPFTRACE_SUITES); do BPFTRACE_CHROOT_CACHE=$(BPFTRACE_CHROOTS) scripts/bpftrace-chroot.sh build $$s || exit 1; done
	versions="host=$$(command -v bpftrace)"; \
	for s in $(BPFTRACE_SUITES); do versions="$$versions,$$s=$$(BPFTRACE_CHROOT_CACHE=$(BPFTRACE_CHROOTS) scripts/bpftrace-chroot.sh path $$s)"; done; \
	BPFTRACE_VERSIONS=$$versions BPFTRACE_MATRIX_OUT=$(CURDIR)/build/bpftrace-versions.md \
		$(GO) test -count=1 -timeout 10m -run 'TestVersionMatrix|TestSelfPrintedMapsAcrossVersions|TestNewerRecordTypes' ./receiver/bpftracereceiver/internal/bpftrace
	@cat build/bpftrace-versions.md

# The packages whose tests need a kernel, run inside Debian 11's 5.10, 12's 6.1
# and 13's 6.12 kernels, each stock and PREEMPT_RT, and the seq packages inside
# Debian 12's 6.1 arm64 (cross-compiled), under QEMU (TCG; two guests
# at a time on two cores; see docs/kernels.md). Kernels, QEMU and virtme-ng are installed by scripts/kernels.sh
# setup into $(KERNELS_CACHE); results go to build/kernels/. The guests get
# every path they need from here (their HOME is not the host's).
test-kernels: deps $(EBPF_EXPORTER) python-grpc
	KERNELS_CACHE=$(KERNELS_CACHE) scripts/kernels.sh setup
	@# The arm64 objects' CO-RE relocations against the arm64 guest's kernel (its
	@# Image holds its BTF), and the host's against its own: the ebpf_exporter
	@# programs and fixtures run in no arm64 guest.
	OTELCOL_SEQ_CORE_BTF=arm64=$$(KERNELS_CACHE=$(KERNELS_CACHE) scripts/kernels.sh vmlinuz arm64),$$($(GO) env GOARCH)=/sys/kernel/btf/vmlinux \
		$(GO) test -count=1 -run TestCOREAgainstKernelBTF ./receiver/grpcreceiver/internal/capture ./receiver/ebpfexporterreceiver/internal/loader
	KERNELS_CACHE=$(KERNELS_CACHE) GO=$(GO) EBPF_EXPORTER_BIN=$(EBPF_EXPORTER) PYGRPC_CACHE=$(PYGRPC_CACHE) test/kernels/run.sh

# bin/otelcol-seq: the collector for this machine (what `make run` and the
# tests run); bin/otelcol-seq-amd64 and bin/otelcol-seq-arm64: one for each
# architecture of the image (deploy/Containerfile picks by TARGETARCH),
# cross-compiled (static, no cgo: no emulation, no cross toolchain) from the
# sources ocb generated for the first, with ocb's own flags.
IMAGE_ARCHES := amd64 arm64
COLLECTORS := $(foreach a,$(IMAGE_ARCHES),$(COLLECTOR)-$(a))
comma := ,
IMAGE_PLATFORMS := $(subst $() ,$(comma),$(addprefix linux/,$(IMAGE_ARCHES)))

build: $(COLLECTOR) $(COLLECTORS)

$(COLLECTOR): $(BUILDER) builder-config.yaml $(MODULE_FILES) $(GO_SOURCES)
	mkdir -p build/otelcol-seq
	GOWORK=off $(BUILDER) --config builder-config.yaml
	mkdir -p bin
	cp build/otelcol-seq/otelcol-seq $(COLLECTOR).tmp && mv -f $(COLLECTOR).tmp $(COLLECTOR)

$(COLLECTOR)-%: $(COLLECTOR)
	cd build/otelcol-seq && GOWORK=off GOOS=linux GOARCH=$* CGO_ENABLED=0 $(GO) build -trimpath -o $(CURDIR)/$@ -ldflags="-s -w" -gcflags= .

# The multi-arch image (podman; FROM scratch, so no emulation): both
# architectures from one build, into the manifest list $(IMAGE).
IMAGE ?= localhost/otelcol-seq:0.1.0
.PHONY: image
image: $(COLLECTORS)
	podman manifest rm $(IMAGE) >/dev/null 2>&1 || true
	podman build --platform $(IMAGE_PLATFORMS) --manifest $(IMAGE) -f deploy/Containerfile .

# grpcio (PyPI) in a venv outside the clone, for the grpc receiver's tests
# against a second gRPC implementation (they call the script themselves too).
PYGRPC_CACHE ?= $(HOME)/.cache/otelcol-seq/python
.PHONY: python-grpc
python-grpc:
	PYGRPC_CACHE=$(PYGRPC_CACHE) scripts/python-grpc.sh >/dev/null

# Jaeger v2 (memory storage) for test/e2e/jaeger_test.go; built once, minutes.
# `scripts/jaeger.sh start` / `stop` run it on 127.0.0.1 (UI on :16686).
.PHONY: jaeger
jaeger: $(JAEGER)

$(JAEGER):
	JAEGER_CACHE=$(JAEGER_CACHE) scripts/jaeger.sh build

# Grafana Loki (single binary, filesystem storage) for test/e2e/loki_test.go
# and config/loki.yaml; built once. `scripts/loki.sh start` / `stop` run it on
# 127.0.0.1:3100 with scripts/loki.yaml.
.PHONY: loki
loki: $(LOKI)

$(LOKI):
	LOKI_CACHE=$(LOKI_CACHE) scripts/loki.sh build

# The deploy/ manifests against a real control plane, the agent's
# k8sattributes against its API with the agent's own token
# (test/e2e/k8s_test.go), and the DaemonSet's pod under a real kubelet with
# Debian's containerd and runc (test/e2e/kubelet_test.go); build tag k8s,
# docs/tests.md. The control plane and the kubelet are built once
# (scripts/k8s.sh build, which returns at once when its cache is complete
# and adds the kubelet to a cache made before it) into $(K8S_CACHE);
# scripts/k8s.sh node installs containerd, runc and the CNI plugins.
K8S_TESTS := TestKubernetesDeploy|TestKubeletDaemonSet
test-k8s: deps $(COLLECTOR)
	K8S_VERSION=$(K8S_VERSION) K8S_CACHE=$(K8S_CACHE) scripts/k8s.sh build
	scripts/k8s.sh node
	OTELCOL_SEQ_BIN=$(CURDIR)/$(COLLECTOR) K8S_BIN_DIR=$(K8S_CACHE)/bin $(GO) test -tags e2e,k8s -count=1 -v -run '^($(K8S_TESTS))$$' ./test/e2e/

# The kubelet's test alone.
test-kubelet:
	$(MAKE) test-k8s K8S_TESTS=TestKubeletDaemonSet

.PHONY: k8s
k8s: $(K8S)

$(K8S):
	K8S_VERSION=$(K8S_VERSION) K8S_CACHE=$(K8S_CACHE) scripts/k8s.sh build

# ebpf_exporter v2.5.1 for test/e2e/ebpfexporter_parity_test.go; built once
# (libbpf 1.5 from the libbpf-sys crate, ebpf_exporter from the module proxy).
.PHONY: ebpf-exporter
ebpf-exporter: $(EBPF_EXPORTER)

$(EBPF_EXPORTER):
	EBPF_EXPORTER_CACHE=$(EBPF_EXPORTER_CACHE) EBPF_EXPORTER_VERSION=$(EBPF_EXPORTER_VERSION) scripts/ebpf-exporter.sh build

# The upstream examples (clang-14, libbpf 1.5.0's headers from the same
# crate); the parity test asks the script for the folder, which then exists.
$(EBPF_EXPORTER_EXAMPLES):
	EBPF_EXPORTER_CACHE=$(EBPF_EXPORTER_CACHE) EBPF_EXPORTER_VERSION=$(EBPF_EXPORTER_VERSION) scripts/ebpf-exporter.sh examples >/dev/null

# System packages the tests use (stress-ng for fork storms, bpftool for leak
# checks, nginx as a proxy) and tracefs, mounted where it is not.
deps:
	@missing=""; for p in $(APT_PACKAGES); do command -v $$p >/dev/null || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
	@# nginx (Debian's nginx-light) is the proxy of the HTTP/1.1 e2e test.
	@command -v nginx >/dev/null || { echo "installing: nginx-light"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light >/dev/null; }
	@# bpftrace tools such as runqlat.bt #include kernel headers; on a Debian host whose
	@# kernel has none in /lib/modules, Debian's generic headers serve (see config/bpftrace.yaml).
	@if [ ! -e /lib/modules/$$(uname -r)/build ] && ! ls -d /usr/src/linux-headers-*-common >/dev/null 2>&1 \
		&& command -v apt-get >/dev/null; then \
		h=linux-headers-$$(dpkg --print-architecture); echo "installing: $$h"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$h >/dev/null) || true; \
	fi
	@if [ "$$(id -u)" = 0 ] && ! mountpoint -q /sys/kernel/tracing 2>/dev/null; then \
		mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true; \
	fi

tools: $(BUILDER) $(MDATAGEN)

$(BUILDER):
	GOBIN=$(TOOLS) $(GO) install go.opentelemetry.io/collector/cmd/builder@$(OCB_VERSION)

# `go install pkg@version` needs the proxy's version list, which it refuses for
# mdatagen; install it from a throw-away module instead.
$(MDATAGEN):
	d=$$(mktemp -d) && cd $$d && \
	printf 'module mdatagentool\ngo 1.25.0\nrequire go.opentelemetry.io/collector/cmd/mdatagen $(MDATAGEN_VERSION)\n' > go.mod && \
	GOFLAGS=-mod=mod GOBIN=$(TOOLS) $(GO) install go.opentelemetry.io/collector/cmd/mdatagen && rm -rf $$d

# The one compiler of every committed BPF object: Debian 12's clang 14 (the
# bpf2go directives name it too). Another clang gives other bytes, and the
# drift check (make drift) would fail on them.
BPF_CLANG := clang-14
LLVM_STRIP := llvm-strip-14
BPF_CLANG_PACKAGES := clang-14 llvm-14 libbpf-dev

# golangci-lint (.golangci.yml), built once from the Go module proxy at a
# pinned version into the cache outside the clone.
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(HOME)/.cache/otelcol-seq/tools/golangci-lint-$(GOLANGCI_LINT_VERSION)/golangci-lint

$(GOLANGCI_LINT):
	GOBIN=$(dir $@) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

# scripts/tidy.sh: every module's go.mod and go.sum tidy on its own (as ocb
# and users build it, without go.work), and go.work using each of them.
# scripts/commit-subjects.sh: commit subjects of 72 characters at most (the
# commits after its BASE; it passes, saying so, where there is no history).
lint: $(GOLANGCI_LINT)
	scripts/commit-subjects.sh
	GO=$(GO) scripts/tidy.sh
	$(GOLANGCI_LINT) run $(PKGS)
	cd tools && GOWORK=off $(GOLANGCI_LINT) run --config ../.golangci.yml ./...

# Regenerated code and objects must equal the committed ones (scripts/drift.sh).
drift:
	MAKE=$(MAKE) scripts/drift.sh

# Rebuilds the committed BPF objects and Go bindings (needs clang) and the
# mdatagen code. Building and testing need neither.
generate: $(MDATAGEN)
	command -v $(BPF_CLANG) >/dev/null && [ -e /usr/include/bpf/bpf_helpers.h ] || (apt-get update -qq && apt-get install -y -qq $(BPF_CLANG_PACKAGES))
	$(GO) generate $(PKGS)
	$(TOOLS_GO) generate ./...
	$(MAKE) -B ebpf-programs

clean:
	rm -rf bin build

# The userspace benchmarks (no root, no kernel; a few minutes): the ring read,
# the seq receiver's ring-to-logs path and its parts, the spans path, the
# bpftrace parser and the ebpf_exporter mapping, -count BENCH_COUNT times,
# printed as one Markdown table (tools/benchtable; medians, and each rate
# against the ring's read rate of the same run). See docs/benchmarks.md.
BENCH_COUNT ?= 3
BENCH_GO := ReadOneSlot|RingToLogs|AppendEvent|DecodeAndMap|BenchmarkDecode$$|ApplyForkExecExit|ApplyAndExport|ParseCapture|ConfigMetrics
BENCH_GO_PKGS := ./internal/ring ./internal/event ./receiver/seqreceiver ./receiver/seqreceiver/internal/pdatamap \
	./receiver/seqreceiver/internal/process ./receiver/bpftracereceiver/internal/bpftrace \
	./receiver/ebpfexporterreceiver/internal/ebpfexporter

.PHONY: bench-go
bench-go:
	set -o pipefail; $(GO) test -run '^$$' -bench '$(BENCH_GO)' -benchmem -count $(BENCH_COUNT) $(BENCH_GO_PKGS) \
		| tee bench-go.txt | $(TOOLS_GO) run ./benchtable

# The transport benchmark (root; about four minutes): the sequencer, the BPF
# ring buffer and perf buffers loaded and read as the seq receiver does
# (internal/sequencer, bpf/seq/seq.bpf.c), and the ring buffer and perf
# buffers as their users write them (ringbuf-native, perfbuf-native:
# tools/seqbench/internal/native), under fork, exec and synthetic getpid
# workloads on 1 and 2 CPUs. Prints a Markdown table and writes
# bench-results/{results.json,results.md,bench.png}; fails when a row errs.
# See docs/benchmarks.md; e.g. make bench BENCH_FLAGS="-workloads synth -transports hook,sequencer,ringbuf,ringbuf-native,perfbuf"
BENCH_FLAGS ?=
.PHONY: bench
bench: deps
	$(TOOLS_GO) build -o $(CURDIR)/bin/seqbench ./seqbench
	bin/seqbench $(BENCH_FLAGS)

# The grpc receiver's cost on a real gRPC load (root; a few minutes, tools
# built once into ~/.cache/otelcol-seq/bench-grpc): grpc-go's helloworld
# server driven by ghz v0.120.0, without and with the receiver, direct and
# through HAProxy, interleaved rounds. BENCH_GRPC_RATES="2000 5000 10000 0"
# instead: at fixed rates, the receiver as config/grpc.yaml ships it
# exporting OTLP to a gateway on loopback, its CPU per span delivered (checked
# against ghz's calls: a failed check fails the target) and BPF time per end
# (about 7 minutes with BENCH_GRPC_ROUNDS=3). Not part of make test; see
# scripts/bench-grpc.sh and docs/benchmarks.md.
# What the deployed agent costs a node per process event (root; about 8
# minutes): deploy/agent.yaml with the DaemonSet's environment, less
# k8sattributes, to a gateway on loopback, under processes exec'ing a
# compiler's argv; agent CPU, BPF time, bytes on the wire and peak RSS per
# exporter compression, interleaved rounds, with a CPU profile
# (scripts/bench-agent.sh).
.PHONY: bench-agent
bench-agent: deps $(COLLECTOR)
	scripts/bench-agent.sh

.PHONY: bench-grpc
bench-grpc: deps $(COLLECTOR)
	scripts/bench-grpc.sh

# What an HTTP/1.1 request costs under the grpc receiver (root; about ten
# minutes; nginx-light from Debian, hey v0.1.4 built once into
# ~/.cache/otelcol-seq/bench-http1): a 1 KiB and a 64 KiB file on a keep-alive
# nginx, without and with the collector on config/grpc.yaml, at fixed rates,
# interleaved rounds, into bench-results/http1/. Not part of make test; see
# scripts/bench-http1.sh and docs/benchmarks.md.
.PHONY: bench-http1
bench-http1: deps $(COLLECTOR)
	scripts/bench-http1.sh

# The ebpf_exporter receiver beside Cloudflare's ebpf_exporter v2.5.1 (root;
# about half a minute): testdata/ebpf_exporter/ebpfx_bench (16384 counter
# series, 1024 exp2 histograms) run by both at once, collecting once a second
# (the reference scraped over HTTP, the collector exporting over OTLP/HTTP to a
# local sink), each one's CPU per collection and the ratio, from one run
# (tools/ebpfxbench), into bench-results/ebpfx/ with the plot of both CPUs over
# the window (docs/bench-ebpf-exporter.png is a copy). See docs/benchmarks.md.
BENCH_EBPFX_FLAGS ?=
.PHONY: bench-ebpf-exporter
bench-ebpf-exporter: $(COLLECTOR) $(EBPF_EXPORTER)
	$(TOOLS_GO) build -o $(CURDIR)/bin/ebpfxbench ./ebpfxbench
	mkdir -p bench-results/ebpfx
	set -o pipefail; bin/ebpfxbench -collector $(COLLECTOR) -reference $(EBPF_EXPORTER) \
		-png bench-results/ebpfx/bench-ebpf-exporter.png $(BENCH_EBPFX_FLAGS) | tee bench-results/ebpfx/results.md

# ebpf_exporter-format objects: the test fixtures (testdata/ebpf_exporter)
# and the ready-to-use programs (programs/), each <name>.bpf.c compiled to
# <name>.bpf.o next to its <name>.yaml for x86_64, and to arm64/<name>.bpf.o
# for arm64, next to arm64/<name>.yaml (a link to ../<name>.yaml: ebpf_exporter
# takes one directory of both per architecture). The objects are committed;
# building and testing need no clang.
EBPF_EXPORTER_SOURCES := $(wildcard testdata/ebpf_exporter/*.bpf.c programs/*.bpf.c)
EBPF_EXPORTER_OBJECTS := $(patsubst %.c,%.o,$(EBPF_EXPORTER_SOURCES)) \
	$(foreach s,$(EBPF_EXPORTER_SOURCES),$(dir $(s))arm64/$(notdir $(s:.c=.o)))
# -fdebug-prefix-map: the objects' BTF line info names the sources relative to
# the clone, so that they are the same bytes wherever they are built (the
# drift check compares them).
EBPF_EXPORTER_CFLAGS := -O2 -g -target bpf -Wall -Werror -Ibpf/headers -fdebug-prefix-map=$(CURDIR)=.

.PHONY: ebpf-programs
ebpf-programs: $(EBPF_EXPORTER_OBJECTS)

define ebpf_exporter_object
	@command -v $(BPF_CLANG) >/dev/null || (apt-get update -qq && apt-get install -y -qq $(BPF_CLANG_PACKAGES))
	$(BPF_CLANG) $(EBPF_EXPORTER_CFLAGS) -D__TARGET_ARCH_$(1) -c $< -o $@
	$(LLVM_STRIP) -g $@
endef

testdata/ebpf_exporter/%.bpf.o: testdata/ebpf_exporter/%.bpf.c testdata/ebpf_exporter/ebpfx.bpf.h
	$(call ebpf_exporter_object,x86)

programs/%.bpf.o: programs/%.bpf.c programs/programs.bpf.h
	$(call ebpf_exporter_object,x86)

testdata/ebpf_exporter/arm64/%.bpf.o: testdata/ebpf_exporter/%.bpf.c testdata/ebpf_exporter/ebpfx.bpf.h
	@mkdir -p $(@D) && ln -sfn ../$*.yaml $(@D)/$*.yaml
	$(call ebpf_exporter_object,arm64)

programs/arm64/%.bpf.o: programs/%.bpf.c programs/programs.bpf.h
	@mkdir -p $(@D) && ln -sfn ../$*.yaml $(@D)/$*.yaml
	$(call ebpf_exporter_object,arm64)

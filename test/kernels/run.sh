#!/usr/bin/env bash
# The kernel test matrix (make test-kernels): the test binaries of the packages
# whose tests need a kernel, compiled here, then run inside each kernel of
# scripts/kernels.sh (QEMU, TCG) with -test.v. Prints a summary per kernel and
# exits non-zero on any failure.
#
#   test/kernels/run.sh [KERNEL...]     default: every kernel (scripts/kernels.sh list)
#
# A kernel runs the packages of packages_of (an arm64 kernel: ARM64_PACKAGES,
# compiled with GOARCH=arm64 into build/kernels/bin-arm64).
# Results go to $KERNELS_RESULTS (default build/kernels): per kernel, each
# binary's output (<pkg>.log), its exit status (<pkg>.rc), the guest's kernel
# (kernel.txt) and summary.txt; the whole matrix in summary.txt.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
GO=${GO:-go}
# Absolute: the guests run each binary from its package's directory.
RESULTS=$(realpath -m "${KERNELS_RESULTS:-$ROOT/build/kernels}")
KERNELS_SH=$ROOT/scripts/kernels.sh

# The packages whose tests need the kernel (root, BPF).
PACKAGES=(
	./internal/sequencer
	./receiver/seqreceiver
	./receiver/ebpfexporterreceiver/internal/ebpfexporter
	./receiver/bpftracereceiver/internal/bpftrace
	./receiver/grpcreceiver/internal/capture
)
# What the arm64 guest (scripts/kernels.sh: Debian's 6.1 arm64) runs, with
# selection's tests of a guest other than 6.1's: the seq packages (bpf2go's
# bpfel objects, one for both architectures) and the grpc capture (its
# arm64 object, system call numbers, registers and Go TLS probes). The
# ebpf_exporter package needs ebpf_exporter, an amd64 binary; bpftrace is
# the host's (amd64). KERNELS_ARM64_PACKAGES (space separated) overrides.
read -r -a ARM64_PACKAGES <<<"${KERNELS_ARM64_PACKAGES:-./internal/sequencer ./receiver/seqreceiver ./receiver/grpcreceiver/internal/capture}"

# Inside the guests (TCG, several times slower than the host) the fork storms are
# shortened, not skipped (test/testutil: ForkOps), and the tests' waits
# for something to happen are stretched (testutil.Scaled). Kernel headers are
# hidden from bpftrace there unless KERNELS_HEADERS=1 (see guest.sh).
GUEST_ENV=(OTELCOL_SEQ_TEST_FORK_OPS=2000 OTELCOL_SEQ_TEST_TIME_SCALE=8 "KERNELS_HEADERS=${KERNELS_HEADERS:-0}")
# Every path a guest needs comes from here, absolute, in GUEST_ENV: never
# from the guest's own environment, whose HOME is not the host's (a cold run
# with HOME elsewhere failed when the 6.1 guests looked for the Python venv
# under theirs). Binaries and sources are in the manifest; the rest below.
#
# Cloudflare's ebpf_exporter (make ebpf-exporter; static, so it runs in any
# guest, which reads the host's files) for the ebpfexporter package's
# TestParityKprobeFentry: the kprobe and fentry fixtures side by side with
# it, where the guest kernel has kprobes and BPF trampolines. On by default
# (make test-kernels builds the binary first); KERNELS_PARITY=0 leaves it out.
EBPF_EXPORTER_BIN=$(realpath -m "${EBPF_EXPORTER_BIN:-$HOME/.cache/otelcol-seq/ebpf_exporter/v2.5.1/ebpf_exporter}")
if [ "${KERNELS_PARITY:-1}" = 1 ] && [ -x "$EBPF_EXPORTER_BIN" ]; then
	GUEST_ENV+=("EBPF_EXPORTER_BIN=$EBPF_EXPORTER_BIN")
elif [ "${KERNELS_PARITY:-1}" = 1 ]; then
	echo "== $EBPF_EXPORTER_BIN is missing (make ebpf-exporter): the guests skip TestParityKprobeFentry" >&2
fi
# The venv with grpcio and h2 (make python-grpc, scripts/python-grpc.sh) for
# the capture package's tests against Python clients (TestCaptureTLSOpenSSLEx):
# built on the host before the guests boot (they have no network), and
# named to them by PYGRPC_CACHE, which the script reads there too.
PYGRPC_CACHE=$(realpath -m "${PYGRPC_CACHE:-$HOME/.cache/otelcol-seq/python}")
GUEST_ENV+=("PYGRPC_CACHE=$PYGRPC_CACHE")
# The arm64 guest's additions to GUEST_ENV (later lines win). Its fork storms
# are shorter still: with 2000 forks stress-ng's 60 s timeout ended the
# storms of TestForkStormAccounting (1629 forks) and TestForkStormEveryTransport
# (871) first while the host was loaded (load 11 on 2 cores); unloaded, 2000
# forks took 33 s.
ARM64_ENV=(OTELCOL_SEQ_TEST_FORK_OPS=500)
# Per binary; a guest runs its binaries one after another.
TEST_TIMEOUT=${KERNELS_TEST_TIMEOUT:-30m}

# selection KERNEL PKG: a -test.run pattern; empty runs everything, - runs
# none of the package's tests (the guest does not run its binary). Each guest
# runs what its kernel can break, and no test twice where a kernel cannot
# tell the runs apart, so that seven guests fit the matrix's time:
#   - every stock kernel: the program loads and attaches (the ebpf_exporter
#     attach kinds, kprobes and fentry beside ebpf_exporter), the lifecycle
#     and thread-exit cases, the fork storm's accounting on every transport,
#     the grpc preflight; the grpc loads and captures (every hook and TLS
#     probe kind, each hook's capture) run once per version, on its RT
#     build (the same verifier and helpers), and on the arm64 guest;
#   - 6.1 (Debian 12's kernel, the oldest with every feature): the grpc
#     capture's kernel-bound cases its RT build does not run (the LRU before
#     6.16 under an HTTP/1 flood, a connection that predates the capture, pid
#     and network namespaces, the older verifier's stack, the OpenSSL _ex
#     probes), container identity, and bpftrace;
#   - the RT builds: what preemption inside a program can break: the
#     sequencer's order and accounting under storms, lapping and pressure
#     (6.1-rt: the whole seq package; the sequencer's lapping stress runs
#     on 6.1-rt, 6.12-rt and arm64: 5.10 has no BPF atomics, and the
#     test skips itself there), the capture's per-CPU staging on each
#     hook and TLS probe kind, the LRU flood, the uprobes' detach under load
#     (RT waits out a grace period per close), and the program loads (an RT
#     verifier refuses some map kinds to tracing programs).
# Left to the host (6.18): tests of pure Go, and the capture's logic-only
# tests (file parsing, filters, rescans, rates and shares: the same BPF code
# on every kernel that loads it), which took 30-45 s each in a guest.
selection() {
	case $1:$2 in
	6.1-rt:capture | rt:capture) echo '^(TestLayoutMatchesBPF|TestLoadHooks|TestCaptureGRPCGo|TestCaptureHTTP1|TestCaptureTLSGo|TestCaptureTLSOpenSSL|TestRawSyscallsSkipsIA32|TestCaptureConnectionFlood|TestTLSShutdownUnderLoad)$' ;;
	# The stock 6.1 guest: what its RT build (the same kernel version, its
	# programs loaded and run on every hook and probe kind there) does not run.
	6.1:capture | stock:capture) echo '^(TestPreflightNamesWhatIsMissing|TestStackFitsOlderVerifiers|TestShareSettingsLoaded|TestSyscallHookRefused|TestCaptureTLSOpenSSLEx|TestCaptureNetNS|TestCaptureSkipsSelfInPIDNamespace|TestCaptureHTTP1FloodKeepsHTTP2|TestCapturePredatingConnection)$' ;;
	6.1-rt:seqreceiver | rt:seqreceiver) echo "" ;;
	6.1:seqreceiver | stock:seqreceiver) echo '^(TestShellTreeForkExecExit|TestTransportsWithoutAtomics|TestSignalExitAndThreads|TestThreadCasesOneProcessExit|TestForkStormAccounting|TestForkStormEveryTransport|TestShutdownLeavesNothingLoaded|TestShellTreeSpans|TestPodmanContainerIdentity|TestSpoofedCgroupNoIdentity)$' ;;
	# bpftrace's receiver supervises a process and parses its output; what a
	# kernel changes is bpftrace's own part: Debian 12's kernel (with Debian
	# 12's bpftrace, which the tests run) and the host's are enough. Not on
	# 5.10: Debian 12's bpftrace 0.17 there without kernel headers cannot
	# type the scripts' own struct definitions from 5.10's BTF ("unknown type
	# name 's64'"), and with headers each script compiles for minutes under
	# TCG; Debian 11 users run Debian 11's bpftrace.
	6.1:bpftrace | stock:bpftrace) echo "" ;;
	*:bpftrace) echo - ;;
	# ebpf_exporter's programs on the RT builds load and run as on the stock
	# builds of the same version.
	*-rt:ebpfexporter | rt:ebpfexporter) echo - ;;
	# No BPF atomic fetch (5.12) nor bpf_task_pt_regs (5.15): the h2nf
	# programs on raw_syscalls, the bounded walk (no bpf_loop), each TLS
	# probe kind, the ia32 check; asking for the other hooks is refused.
	# As on 6.1 and 6.12, the loads and captures run once per version, on
	# its RT build (the same verifier and helpers, and preemption inside
	# the programs besides); the stock build the preflight, which reads
	# the kernel's configuration.
	5.10-rt:capture) echo '^(TestLayoutMatchesBPF|TestCaptureGRPCGo|TestCaptureHTTP1|TestCaptureTLSGo|TestCaptureTLSOpenSSL|TestRawSyscallsSkipsIA32)$' ;;
	5.10:capture) echo '^(TestPreflightNamesWhatIsMissing)$' ;;
	# 6.12's RT build: the loads, and the staging on each hook and probe kind.
	*-rt:capture) echo '^(TestLayoutMatchesBPF|TestLoadHooks|TestCaptureGRPCGo|TestCaptureHTTP1|TestCaptureTLSGo|TestCaptureTLSOpenSSL|TestRawSyscallsSkipsIA32)$' ;;
	# Its stock build: what the RT build does not run.
	6.12:capture) echo '^(TestPreflightNamesWhatIsMissing|TestSyscallHookRefused|TestCaptureNetNS)$' ;;
	*:seqreceiver) echo '^(TestShellTreeForkExecExit|TestTransportsWithoutAtomics|TestSignalExitAndThreads|TestThreadCasesOneProcessExit|TestForkStormAccounting|TestForkStormEveryTransport|TestShutdownLeavesNothingLoaded|TestShellTreeSpans)$' ;;
	*:capture) echo '^(TestPreflightNamesWhatIsMissing|TestLayoutMatchesBPF|TestLoadHooks|TestCaptureGRPCGo|TestCaptureHTTP1|TestCaptureTLSGo|TestCaptureTLSOpenSSL|TestRawSyscallsSkipsIA32|TestSyscallHookRefused|TestCaptureNetNS)$' ;;
	*) echo "" ;;
	esac
}

# skipped KERNEL PKG: a -test.skip pattern: tests whose fixture the kernel
# cannot have; in packages a guest runs whole, the tests of pure Go and
# those that measure time against the wall clock (the host runs them): under
# TCG their producers and readers run at other speeds than they assume; and
# tests another guest runs where they can break more.
skipped() {
	case $1:$2 in
	# The side-by-side benchmark's fixture fills its maps in one bpf_loop
	# (Linux 5.17); 5.10 refuses it, as it should.
	5.10*:ebpfexporter) echo '^(TestIntegrationBenchFixture|TestLabelCacheChurnIsBounded)$'; return ;;
	# The sequencer lapped by its producers: order and accounting under
	# preemption inside the programs (6.1-rt, 6.12-rt; 5.10 has no BPF
	# atomics) and under arm64's weaker memory order; a stock amd64 kernel
	# tells nothing its RT build of the same version does not (26-32 s
	# each in a guest).
	6.1:sequencer | 6.12:sequencer | 5.10:sequencer | stock:sequencer) echo '^TestLappedAccountingStress$'; return ;;
	# Container identity is cgroup paths, not preemption: the stock 6.1
	# guest runs it, not its RT build.
	*-rt:seqreceiver | rt:seqreceiver) echo '^(TestFake|TestParallelMapping|TestForkStormWithContainerAccounting|TestPodmanContainerIdentity)'; return ;;
	esac
	case $2 in
	# TestForkStormWithContainerAccounting checks the test's own reading
	# order across container resources (pure Go, on the host); its kernel
	# parts are TestForkStormAccounting's and TestPodmanContainerIdentity's,
	# which run on 6.1. In a guest it took 117-129 s.
	seqreceiver) echo '^(TestFake|TestParallelMapping|TestForkStormWithContainerAccounting)' ;;
	# The supervisor's tests against the fake bpftrace (a shell script): no
	# kernel involved, and their timing assumptions fail in a loaded guest.
	bpftrace) echo '^TestRunner' ;;
	# The label cache's churn is pure Go (21-25 s in a guest).
	ebpfexporter) echo '^TestLabelCacheChurnIsBounded$' ;;
	*) echo "" ;;
	esac
}

name_of() { basename "$1"; }

# KERNELS_ONLY=regexp keeps the packages whose name matches (e.g. bpftrace).
if [ -n "${KERNELS_ONLY:-}" ]; then
	for list in PACKAGES ARM64_PACKAGES; do
		declare -n pkgs=$list
		keep=()
		for p in "${pkgs[@]}"; do
			[[ $(name_of "$p") =~ $KERNELS_ONLY ]] && keep+=("$p")
		done
		pkgs=("${keep[@]}")
		unset -n pkgs
	done
fi

kernels=("$@")
[ ${#kernels[@]} -gt 0 ] || mapfile -t kernels < <("$KERNELS_SH" list)

# packages_of KERNEL: the packages KERNEL runs, one a line.
packages_of() {
	case $("$KERNELS_SH" arch "$1") in
	arm64) printf '%s\n' "${ARM64_PACKAGES[@]}" ;;
	*) printf '%s\n' "${PACKAGES[@]}" ;;
	esac
}
# bin_of KERNEL: where KERNEL's test binaries are (bin: the host's amd64).
bin_of() {
	case $("$KERNELS_SH" arch "$1") in
	arm64) echo "$RESULTS/bin-arm64" ;;
	*) echo "$RESULTS/bin" ;;
	esac
}

arches=$(for k in "${kernels[@]}"; do "$KERNELS_SH" arch "$k"; done | sort -u)
if grep -qx amd64 <<<"$arches"; then
	mkdir -p "$RESULTS/bin"
	echo "== compiling test binaries (go test -c)"
	for p in "${PACKAGES[@]}"; do
		(cd "$ROOT" && "$GO" test -c -o "$RESULTS/bin/$(name_of "$p").test" "$p")
	done
	if [[ " ${PACKAGES[*]} " == *" ./receiver/grpcreceiver/internal/capture "* ]]; then
		# The Go TLS program the capture tests run (the guests do not build),
		# and the Python venv.
		(cd "$ROOT" && "$GO" build -o "$RESULTS/bin/grpctls" ./test/grpctest/cmd/grpctls)
		echo "== the Python venv ($PYGRPC_CACHE)"
		PYGRPC_CACHE=$PYGRPC_CACHE "$ROOT/scripts/python-grpc.sh" >/dev/null
	fi
fi
if grep -qx arm64 <<<"$arches"; then
	mkdir -p "$RESULTS/bin-arm64"
	echo "== compiling arm64 test binaries (GOARCH=arm64 go test -c)"
	for p in "${ARM64_PACKAGES[@]}"; do
		(cd "$ROOT" && CGO_ENABLED=0 GOARCH=arm64 "$GO" test -c -o "$RESULTS/bin-arm64/$(name_of "$p").test" "$p")
	done
	if [[ " ${ARM64_PACKAGES[*]} " == *" ./receiver/grpcreceiver/internal/capture "* ]]; then
		(cd "$ROOT" && CGO_ENABLED=0 GOARCH=arm64 "$GO" build -o "$RESULTS/bin-arm64/grpctls" ./test/grpctest/cmd/grpctls)
	fi
fi

overall=0
summary=$RESULTS/summary.txt
: >"$summary"
{
	printf '| kernel | version | arch | tests run | passed | failed | skipped | storm issued | delivered | lost | wall |\n'
	printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
} >"$summary.table"

# Each guest runs on one TCG thread (scripts/kernels.sh), so guests run
# KERNELS_JOBS at a time (default: one per core), each logging to its own
# directory; the summaries are printed in the matrix's order once all ended.
JOBS=${KERNELS_JOBS:-$(nproc)}
run_guest() {
	local k=$1 dir=$RESULTS/$1 p n rc
	rm -rf "$dir"
	mkdir -p "$dir"
	local arch bin
	arch=$("$KERNELS_SH" arch "$k")
	bin=$(bin_of "$k")
	# The manifest the guest script reads: one binary a line, its fields
	# separated by ";" (the -test.run and -test.skip patterns hold "|").
	while read -r p; do
		[ -n "$p" ] || continue # none left by KERNELS_ONLY
		n=$(name_of "$p")
		[ "$(selection "$k" "$n")" = - ] && continue
		printf '%s;%s;%s;%s;%s;%s\n' "$n" "$bin/$n.test" "$ROOT/${p#./}" "$TEST_TIMEOUT" "$(selection "$k" "$n")" "$(skipped "$k" "$n")"
	done < <(packages_of "$k") >"$dir/manifest"
	{
		# ebpf_exporter is an amd64 binary, for the ebpfexporter package
		# (amd64 only); the venv's grpcio too, for tests the arm64 guest
		# does not run.
		if [ "$arch" = arm64 ]; then
			printf '%s\n' "${GUEST_ENV[@]}" | grep -v -e '^EBPF_EXPORTER_BIN=' -e '^PYGRPC_CACHE='
			printf '%s\n' "${ARM64_ENV[@]}"
		else
			printf '%s\n' "${GUEST_ENV[@]}"
		fi
		echo "GRPCTLS_BIN=$bin/grpctls"
	} >"$dir/env"
	echo "== $k: booting $("$KERNELS_SH" version "$k")"
	# Through a pipe: QEMU reopens its stdout and stderr by path
	# (/proc/self/fd/N), which would truncate a file and lose the lines
	# kernels.sh wrote before (the boot attempt, a retry).
	set +e
	"$KERNELS_SH" run "$k" "$ROOT/test/kernels/guest.sh" "$dir" 2>&1 | cat >"$dir/console.log"
	rc=${PIPESTATUS[0]}
	set -e
	echo "$rc" >"$dir/run.rc"
	echo "== $k: ended (exit $rc)"
}

pids=()
for k in "${kernels[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
		wait -n || true
	done
	run_guest "$k" &
	pids+=($!)
done
for pid in "${pids[@]}"; do
	wait "$pid" || overall=1
done

for k in "${kernels[@]}"; do
	dir=$RESULTS/$k
	grep -E '^kernels: ' "$dir/console.log" || true
	[ "$(cat "$dir/run.rc" 2>/dev/null)" = 0 ] || overall=1
	"$ROOT/test/kernels/summarize.sh" "$k" "$dir" | tee -a "$summary" || overall=1
	tail -n 1 "$dir/summary.txt" >>"$summary.table"
done

echo
echo "== kernel matrix"
cat "$summary.table" | tee -a "$summary"
rm -f "$summary.table"
exit $overall

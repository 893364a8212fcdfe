// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package testutil holds what several packages' tests share. Test code only:
// nothing outside a _test.go file imports it.
//
//   - root.go: RequireRoot, the one rule for tests that need root (they skip
//     as another user and never skip as root, as in CI).
//   - slow.go: Scaled and ForkOps, which stretch waits and shorten fork
//     storms from the environment test/kernels sets in its QEMU guests
//     (TimeScaleEnv, ForkOpsEnv).
//   - pdata.go: LoadConfig (a receiver's section of testdata/config.yaml into
//     its default config), EachMetric, EachLogRecord, EachResourceLogRecord
//     and EachSpan (walk pdata).
//   - cgroups.go: KubepodsParent (a random pod uid) and KubepodsParentOf (a
//     given one), a cgroup parent that makes a podman container a Kubernetes
//     pod's to the seq receiver, cleaned up after the test.
//   - files.go: CopyFile.
//   - golden.go: Golden and GoldenJSON, the golden-file comparison, and the
//     one -update flag that rewrites the files (go test -run X -update).
//
// The subpackage ia32 makes 32-bit system calls (int 0x80) for tests of BPF
// programs that must tell them from 64-bit ones.
package testutil

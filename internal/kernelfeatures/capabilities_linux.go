// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package kernelfeatures

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Capability numbers from linux/capability.h (CAP_BPF and CAP_PERFMON are 5.8+).
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// MissingCapabilities names the effective capabilities the loaders need
// and lack. CAP_SYS_ADMIN stands in for both, as the kernel allows.
func MissingCapabilities() []string {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return []string{fmt.Sprintf("(capget failed: %v)", err)}
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	if has(capSysAdmin) {
		return nil
	}
	var missing []string
	if !has(capBPF) {
		missing = append(missing, "CAP_BPF")
	}
	if !has(capPerfmon) {
		missing = append(missing, "CAP_PERFMON")
	}
	return missing
}

// RequireCapabilities is the error of a loader (who) whose process lacks
// CAP_BPF or CAP_PERFMON, naming them and the fix; nil where it has them.
func RequireCapabilities(who string) error {
	if missing := MissingCapabilities(); len(missing) > 0 {
		return fmt.Errorf("%s needs the capabilities CAP_BPF and CAP_PERFMON (or root); missing %s: run the collector as root or grant them with `setcap cap_bpf,cap_perfmon+ep <collector binary>`", who, strings.Join(missing, " and "))
	}
	return nil
}

// PermissionDenied is a load refused with EPERM (err): who needs the
// capabilities.
func PermissionDenied(who string, err error) error {
	return fmt.Errorf("permission denied; %s needs CAP_BPF and CAP_PERFMON (or root): %w", who, err)
}

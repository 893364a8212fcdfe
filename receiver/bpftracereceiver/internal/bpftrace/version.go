// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// minVersion is the oldest bpftrace accepted. The JSON shapes parsed here
// were checked against bpftrace 0.17 (captured) and the source of later
// releases; `-f json` output with min/max histogram buckets, comma-joined
// multi-key map keys and `print()` of single maps are all present from 0.13.
var minVersion = version{0, 13, 0}

type version struct{ major, minor, patch int }

func (v version) String() string { return fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch) }

func (v version) less(o version) bool {
	if v.major != o.major {
		return v.major < o.major
	}
	if v.minor != o.minor {
		return v.minor < o.minor
	}
	return v.patch < o.patch
}

var versionRE = regexp.MustCompile(`v?(\d+)\.(\d+)(?:\.(\d+))?`)

// parseVersion reads `bpftrace --version` output, e.g. "bpftrace v0.17.0",
// "bpftrace v0.20.0-12-gabcdef" or "bpftrace v0.21.2-1.fc41".
func parseVersion(out string) (version, error) {
	m := versionRE.FindStringSubmatch(out)
	if m == nil {
		return version{}, fmt.Errorf("no version number in %q", strings.TrimSpace(out))
	}
	var v version
	v.major, _ = strconv.Atoi(m[1])
	v.minor, _ = strconv.Atoi(m[2])
	if m[3] != "" {
		v.patch, _ = strconv.Atoi(m[3])
	}
	return v, nil
}

// resolveBinary finds the bpftrace executable and checks its version. It
// returns the path and the version found.
func resolveBinary(ctx context.Context, binary string) (string, version, error) {
	name := binary
	if name == "" {
		name = DefaultBinary
	}
	path, err := exec.LookPath(name)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) && !strings.Contains(name, "/") {
			return "", version{}, fmt.Errorf("bpftrace binary %q not found on PATH; install bpftrace or set binary to its absolute path", name)
		}
		return "", version{}, fmt.Errorf("bpftrace binary %q is not usable (%v); install bpftrace or fix binary", name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	if err != nil {
		return path, version{}, fmt.Errorf("%s --version failed (%v): %s; check that binary is bpftrace", path, err, strings.TrimSpace(string(out)))
	}
	v, err := parseVersion(string(out))
	if err != nil {
		return path, version{}, fmt.Errorf("%s --version: %w; check that binary is bpftrace", path, err)
	}
	if v.less(minVersion) {
		return path, v, fmt.Errorf("bpftrace %s at %s is too old: bpftrace >= %s is needed for its JSON output (-f json); upgrade bpftrace or set binary to a newer one", v, path, minVersion)
	}
	return path, v, nil
}

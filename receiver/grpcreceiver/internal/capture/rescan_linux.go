// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"context"
	"errors"
	"slices"
)

// Rescanned is what RescanTLS probed: files first seen in processes that
// started since the last look.
type Rescanned struct {
	LibSSL    []string
	Go        []GoBinary
	Failed    []string // libssl files that could not be probed, with why
	GoSkipped []string // Go executables with crypto/tls that could not be, with why
}

// RescanTLS looks at the processes that started since the capture opened
// (or since the last RescanTLS) and probes the libssl files they map and
// their executables (Go crypto/tls) not probed yet. A uprobe is on the
// file, so every later process of a probed file is covered already; a
// process that loads libssl only after it was looked at is not. Safe beside
// the reader; not before Open with TLS. It stops between two processes when
// ctx is done or the capture is detached (the rest is looked at next time),
// and holds no lock while it parses files.
func (c *Capture) RescanTLS(ctx context.Context) Rescanned {
	c.scanMu.Lock()
	defer c.scanMu.Unlock()
	var out Rescanned
	if c.pids == nil || c.closing.Load() {
		return out
	}
	c.tlsMu.Lock()
	skipped := len(c.goSkip)
	c.tlsMu.Unlock()
	for _, pid := range procPIDs() {
		if ctx.Err() != nil || c.closing.Load() {
			break
		}
		if c.pids[pid] {
			continue
		}
		c.pids[pid] = true
		if !c.wanted(pid) {
			continue
		}
		for _, m := range libSSLOf(pid) {
			isNew, err := c.probeLibSSL(m.name(), m.open)
			switch {
			case errors.Is(err, errDetached):
			case err != nil:
				c.tlsFailed.Add(1)
				out.Failed = append(out.Failed, err.Error())
			case isNew:
				out.LibSSL = append(out.LibSSL, m.name())
			}
		}
		if b := c.attachGoProcess(pid); b != nil {
			out.Go = append(out.Go, *b)
		}
	}
	c.tlsMu.Lock()
	out.GoSkipped = slices.Clone(c.goSkip[skipped:])
	c.tlsMu.Unlock()
	return out
}

// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/link"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/gotls"
)

var tlsPrograms = []string{
	"h2_ssl_write", "h2_ssl_write_ret", "h2_ssl_read", "h2_ssl_read_ret", "h2_ssl_free",
	"h2_ssl_write_ex", "h2_ssl_read_ex", "h2_go_write", "h2_go_read", "h2_go_read_ret", "h2_go_close",
}

// uprobes attaches prog to symbol sym (when offs is nil) or to the file
// offsets offs of ex, at entry or (ret) return: one uprobe_multi link where
// the programs were loaded for them (c.multi), else one perf-event uprobe
// per point. All or none.
func (c *Capture) uprobes(ex *link.Executable, prog, sym string, offs []uint64, ret bool) ([]link.Link, error) {
	p := c.coll.Programs[prog]
	if c.multi {
		syms, opts := []string{sym}, (*link.UprobeMultiOptions)(nil)
		if sym == "" {
			syms, opts = nil, &link.UprobeMultiOptions{Addresses: offs}
		}
		attach := ex.UprobeMulti
		if ret {
			attach = ex.UretprobeMulti
		}
		l, err := attach(syms, p, opts)
		if err != nil {
			return nil, err
		}
		return []link.Link{l}, nil
	}
	attach := ex.Uprobe
	if ret {
		attach = ex.Uretprobe
	}
	if sym != "" {
		l, err := attach(sym, p, nil)
		if err != nil {
			return nil, err
		}
		return []link.Link{l}, nil
	}
	var links []link.Link
	for _, off := range offs {
		l, err := attach("", p, &link.UprobeOptions{Address: off})
		if err != nil {
			_ = closeLinks(links)
			return nil, fmt.Errorf("at file offset %#x: %w", off, err)
		}
		links = append(links, l)
	}
	return links, nil
}

// errDetached: the capture was detached while a file was being probed.
var errDetached = errors.New("tls: the capture is detached")

// keep adds the links of a file probed, and records it, unless the capture
// was detached meanwhile (then they are closed).
func (c *Capture) keep(links []link.Link, record func()) error {
	c.tlsMu.Lock()
	defer c.tlsMu.Unlock()
	if c.detached {
		return errDetached // the caller closes them
	}
	c.links = append(c.links, links...)
	record()
	return nil
}

// maxListed bounds the lists of files not probed (LibSSLSkipped,
// GoSkipped): the later ones are counted (tls_failed_unlisted).
const maxListed = 256

// listed appends why to list unless it holds maxListed already (then
// counted); under tlsMu.
func (c *Capture) listed(list []string, why string) []string {
	if len(list) >= maxListed {
		c.tlsUnlisted.Add(1)
		return list
	}
	return append(list, why)
}

// failed counts a file that could not be parsed or probed, by reason.
func (c *Capture) failed(err error) {
	c.tlsFailed.Add(1)
	switch {
	case errors.Is(err, gotls.ErrNotHeld):
		c.tlsNotHeld.Add(1)
	case errors.Is(err, gotls.ErrTooLarge):
		c.tlsTooLarge.Add(1)
	}
}

// TLSFilesFailed counts the files (executables, libssl) whose parsing or
// probing failed (each once): hostile or damaged ones among them.
func (c *Capture) TLSFilesFailed() uint64 { return c.tlsFailed.Load() }

// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package capture

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/cilium/ebpf/link"

	"github.com/otelcol-seq/otelcol-seq/internal/multiarch"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/gotls"
)

// attachTLS attaches the OpenSSL probes to every libssl file: those mapped by
// running processes (one that cannot be probed is listed in LibSSLSkipped),
// the extra paths and the usual locations (an error there fails the start);
// one file reached by several paths is attached once.
func (c *Capture) attachTLS(extra []string) error {
	c.sslSeen = files{}
	var looked []string
	for _, pid := range procPIDs() {
		if !c.wanted(pid) {
			continue
		}
		for _, m := range libSSLOf(pid) {
			looked = append(looked, m.name())
			if _, err := c.probeLibSSL(m.name(), m.open); err != nil {
				c.skipLibSSL(err)
			}
		}
	}
	lib := "/usr/lib/" + multiarch.Tuple()
	usual := []string{lib + "/libssl.so.3", lib + "/libssl.so.1.1", "/usr/lib64/libssl.so.3"}
	for i, p := range slices.Concat(extra, usual) {
		looked = append(looked, p)
		_, err := c.probeLibSSL(p, func() (*os.File, error) { return os.Open(p) })
		if err != nil && (i < len(extra) || !errors.Is(err, os.ErrNotExist)) {
			return err
		}
	}
	if len(c.libssl) == 0 {
		return fmt.Errorf("tls: no libssl found (looked in the running processes' maps and at %v): install OpenSSL or name it in tls::libssl_paths", looked)
	}
	return nil
}

// skipLibSSL records a libssl file that could not be probed.
func (c *Capture) skipLibSSL(err error) {
	c.failed(err)
	c.tlsMu.Lock()
	c.sslSkip = c.listed(c.sslSkip, err.Error())
	c.tlsMu.Unlock()
}

// probeLibSSL opens a libssl file once, and probes it through that
// descriptor if it is one not seen yet; isNew says it was.
func (c *Capture) probeLibSSL(name string, open func() (*os.File, error)) (isNew bool, err error) {
	f, err := open()
	if err != nil {
		return false, fmt.Errorf("tls: open %s: %w", name, err)
	}
	defer f.Close()
	id, err := idOf(f)
	if err != nil {
		return false, fmt.Errorf("tls: %s: %w", name, err)
	}
	if !c.seen(c.sslSeen, id) {
		return false, nil
	}
	err = c.attachLibSSL(f, name)
	c.sslSeen[id] = err == nil
	return true, err
}

// attachLibSSL attaches the OpenSSL probes to the libssl open as f (name:
// what to call it), all or none.
func (c *Capture) attachLibSSL(f *os.File, name string) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("tls: %s: %w: parser panic: %v", name, gotls.ErrMalformed, v)
		}
	}()
	if err := gotls.CheckLibrary(f); err != nil {
		return fmt.Errorf("tls: %s: %w", name, err)
	}
	ex, err := openExecutable(f)
	if err != nil {
		return fmt.Errorf("tls: open %s: %w", name, err)
	}
	var links []link.Link
	defer func() {
		if err != nil {
			_ = closeLinks(links)
		}
	}()
	for _, a := range []struct {
		sym, prog string
		ret       bool
	}{
		{"SSL_write", "h2_ssl_write", false}, {"SSL_write", "h2_ssl_write_ret", true},
		{"SSL_read", "h2_ssl_read", false}, {"SSL_read", "h2_ssl_read_ret", true},
		{"SSL_free", "h2_ssl_free", false},
		// OpenSSL 1.1.1+ (Python's ssl module, among others, calls these).
		{"SSL_write_ex", "h2_ssl_write_ex", false}, {"SSL_write_ex", "h2_ssl_write_ret", true},
		{"SSL_read_ex", "h2_ssl_read_ex", false}, {"SSL_read_ex", "h2_ssl_read_ret", true},
	} {
		ls, err := c.uprobes(ex, a.prog, a.sym, nil, a.ret)
		if err != nil && strings.HasSuffix(a.sym, "_ex") && errors.Is(err, link.ErrNoSymbol) {
			continue // OpenSSL before 1.1.1
		}
		if err != nil {
			return fmt.Errorf("tls: attach %s in %s: %w", a.sym, name, err)
		}
		links = append(links, ls...)
	}
	return c.keep(links, func() { c.libssl = append(c.libssl, name) })
}

// LibSSL lists the libssl files the TLS probes are attached to.
func (c *Capture) LibSSL() []string {
	c.tlsMu.Lock()
	defer c.tlsMu.Unlock()
	return slices.Clone(c.libssl)
}

// LibSSLSkipped lists the libssl files of running processes that could not
// be probed, each with why.
func (c *Capture) LibSSLSkipped() []string {
	c.tlsMu.Lock()
	defer c.tlsMu.Unlock()
	return slices.Clone(c.sslSkip)
}

// LibSSLInUse lists the libssl files mapped by running processes
// (/proc/*/maps), as paths through their roots.
func LibSSLInUse() []string {
	var out []string
	for _, pid := range procPIDs() {
		for _, m := range libSSLOf(pid) {
			if !slices.Contains(out, m.name()) {
				out = append(out, m.name())
			}
		}
	}
	return out
}

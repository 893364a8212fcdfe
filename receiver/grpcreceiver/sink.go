// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package grpcreceiver

import (
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/http1"
)

// byProtocol hands the capture's records to the tracker of their
// connection's protocol (capture.Sink): the capture marks the opens and
// chunks of HTTP/1.x connections (h2.ConnOpen.HTTP1, h2.Chunk.HTTP1). A
// close and a loss go to both; each ignores connections it does not follow.
type byProtocol struct {
	h2 *h2.Tracker
	h1 *http1.Tracker
}

func (p byProtocol) ConnOpen(o *h2.ConnOpen) {
	if o.HTTP1 {
		p.h1.ConnOpen(o)
		return
	}
	p.h2.ConnOpen(o)
}

func (p byProtocol) Chunk(c *h2.Chunk) {
	if c.HTTP1 {
		p.h1.Chunk(c)
		return
	}
	p.h2.Chunk(c)
}

func (p byProtocol) ConnClose(c *h2.ConnClose) {
	p.h2.ConnClose(c)
	p.h1.ConnClose(c)
}

func (p byProtocol) Lost(l *h2.Lost) {
	p.h2.Lost(l)
	p.h1.Lost(l)
}

// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"io"

	"github.com/golang/snappy"
	"google.golang.org/grpc/encoding"
)

// The agent's exporter compresses with snappy (deploy/agent.yaml), framed
// as the collector's configgrpc writes it: the test's OTLP sinks, plain
// grpc-go servers, take it as a gateway's OTLP receiver does.
func init() { encoding.RegisterCompressor(snappyCodec{}) }

type snappyCodec struct{}

func (snappyCodec) Name() string { return "snappy" }

func (snappyCodec) Compress(w io.Writer) (io.WriteCloser, error) {
	return snappy.NewBufferedWriter(w), nil
}

func (snappyCodec) Decompress(r io.Reader) (io.Reader, error) { return snappy.NewReader(r), nil }

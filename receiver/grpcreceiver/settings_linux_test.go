// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package grpcreceiver

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/capture"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/http1"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/spanmap"
)

// TestSettingsFromConfig: every config field, set to a value other than
// its default, arrives in the settings of the code it configures.
func TestSettingsFromConfig(t *testing.T) {
	c := &Config{
		Hook: HookRawSyscalls, RingSlots: 1 << 12, MaxConnections: 100, MaxStreamsPerConnection: 7,
		MaxHeaderBlock: 2048, MaxCaptureRate: 1 << 20, MaxCaptureRatePerUser: 5 << 20, CaptureFrameCost: 77, MaxHeaderTableSize: 8192, MaxMemory: 2 << 20,
		IdleTimeout: 42 * time.Second, Ports: []uint16{50051}, MaxBatch: 3, ServiceName: "svc",
		Spans: SpansConfig{Methods: []string{"a.B/C"}, MaxMethods: 9, MaxAttributeLength: 33, MaxStatusMessageLength: 44, URLQuery: true},
		// Both off is refused: http1 is checked off below.
		Protocols: ProtocolsConfig{HTTP2: false, HTTP1: true},
		TLS: TLSConfig{
			Enabled: true, LibSSLPaths: []string{"/l/libssl.so.3"}, GoBinaries: []string{"/g"}, RescanInterval: 3 * time.Second,
			IncludeExecutables: []string{"/ie"}, ExcludeExecutables: []string{"/ee"}, IncludeCgroups: []string{"/ic"}, ExcludeCgroups: []string{"/ec"},
		},
	}
	require.NoError(t, confmap.Validate(c))
	// every field of the Config (nested ones too) is set above, to a value
	// other than its default: a new field fails here until it is
	assertAllDiffer(t, "", reflect.ValueOf(*c), reflect.ValueOf(*createDefaultConfig()), ".Protocols.HTTP1")

	in := c.settings()
	assert.Equal(t, capture.Options{
		Hook: capture.HookRawSyscalls, RingSlots: 1 << 12, MaxConns: 100, HeaderCap: 2048, Rate: 1 << 20, UserRate: 5 << 20, FrameCost: 77,
		HTTP1: true, NoHTTP2: true, TLS: true, LibSSL: []string{"/l/libssl.so.3"}, GoBinaries: []string{"/g"},
		Filter: capture.ProcFilter{IncludeExecutables: []string{"/ie"}, ExcludeExecutables: []string{"/ee"}, IncludeCgroups: []string{"/ic"}, ExcludeCgroups: []string{"/ec"}},
	}, in.capture)
	assert.Equal(t, h2.Config{
		MaxConns: 100, MaxStreamsPerConn: 7, MaxHeaderBlock: 2048, IdleTimeout: 42 * time.Second,
		MaxHeaderTableSize: 8192, MemoryBudget: 2 << 20,
	}, in.tracker)
	assert.Equal(t, http1.Config{MaxConns: 100, MaxPipelined: 7, MaxHeaderBytes: 2048, IdleTimeout: 42 * time.Second, MemoryBudget: 2 << 20}, in.http1,
		"HTTP/2 off: HTTP/1.x has the whole max_memory")
	assert.Equal(t, spanmap.Config{KnownMethods: []string{"a.B/C"}, MaxMethods: 9, MaxValueLength: 33, MaxStatusMessageLength: 44, URLQuery: true}, in.spans)
	assert.Equal(t, []uint16{50051}, in.ports)
	assert.Equal(t, 3, in.maxBatch)
	assert.Equal(t, "svc", in.serviceName)
	assert.Equal(t, 3*time.Second, in.rescan)

	// protocols::http1 off, http2 on: the capture leaves HTTP/1.x out; both
	// on: max_memory halved between the trackers.
	c.Protocols = ProtocolsConfig{HTTP2: true}
	require.NoError(t, confmap.Validate(c))
	assert.False(t, c.settings().capture.HTTP1)
	assert.False(t, c.settings().capture.NoHTTP2)
	c.Protocols.HTTP1 = true
	both := c.settings()
	assert.Equal(t, c.MaxMemory, both.tracker.MemoryBudget+both.http1.MemoryBudget)
	assert.Equal(t, c.MaxMemory/2, both.tracker.MemoryBudget)
	in = both

	// and the tracker runs with them: max_memory is its budget
	var calls int
	tr := h2.NewTracker(in.tracker, func(*h2.Call) { calls++ }, nil)
	for id := h2.ConnID(1); id < 2000; id++ {
		tr.ConnOpen(&h2.ConnOpen{Conn: id, Role: h2.RoleClient})
		tr.Chunk(&h2.Chunk{Conn: id, Data: []byte(h2.Preface)})
		require.LessOrEqual(t, tr.MemoryUsed(), c.MaxMemory)
	}
}

// assertAllDiffer: every field of v but those of except (paths checked
// apart) differs from def's.
func assertAllDiffer(t *testing.T, path string, v, def reflect.Value, except ...string) {
	t.Helper()
	if slices.Contains(except, path) {
		return
	}
	if v.Kind() == reflect.Struct {
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.IsExported() {
				assertAllDiffer(t, path+"."+f.Name, v.Field(i), def.Field(i), except...)
			}
		}
		return
	}
	assert.NotEqual(t, def.Interface(), v.Interface(), "%s is at its default in the test: set it to another value and check that it arrives", path)
}

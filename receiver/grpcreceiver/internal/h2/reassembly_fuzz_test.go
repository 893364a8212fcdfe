// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2_test

import (
	"context"
	"sync"
	"testing"

	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/testcapture"
)

var (
	recordOnce sync.Once
	recorded   []testcapture.Event
)

// recording is a real grpc-go exchange (unary calls of two methods,
// metadata that churns the HPACK tables, a server stream, a bidi stream),
// as the kernel would capture it.
func recording(t *testing.T) []testcapture.Event {
	recordOnce.Do(func() {
		h := start(t)
		for i := 0; i < 40; i++ {
			ctx := metadata.AppendToOutgoingContext(context.Background(), "x-id", string(rune('a'+i%26))+"-padding-padding-padding")
			if _, err := h.client.UnaryCall(ctx, &testgrpc.SimpleRequest{}); err != nil {
				t.Fatal(err)
			}
			if _, err := h.client.EmptyCall(ctx, &testgrpc.Empty{}); err != nil {
				t.Fatal(err)
			}
		}
		so, err := h.client.StreamingOutputCall(context.Background(), &testgrpc.StreamingOutputCallRequest{
			ResponseParameters: []*testgrpc.ResponseParameters{{Size: 10}, {Size: 10}},
		})
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := so.Recv(); err != nil {
				break
			}
		}
		bidi, err := h.client.FullDuplexCall(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_ = bidi.Send(&testgrpc.StreamingOutputCallRequest{})
		_, _ = bidi.Recv()
		_ = bidi.CloseSend()
		_, _ = bidi.Recv()
		recorded = testcapture.Strip(h.events(), 0)
	})
	return recorded
}

// FuzzReassembly replays a real recording chunked, dropped, duplicated,
// overlapped and reordered as the fuzzer says: nothing may panic and no
// call may carry a method the recording does not have.
func FuzzReassembly(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5})
	f.Add([]byte{1, 1, 1, 1, 0, 0, 0, 0, 3, 3, 3, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		events := recording(t)
		var out []testcapture.Event
		var prev *h2.Chunk
		for i, e := range events {
			op := byte(0)
			if i < len(ops) {
				op = ops[i]
			}
			c := e.Chunk
			if c == nil {
				out = append(out, e)
				continue
			}
			switch op % 6 {
			case 1: // lost
				continue
			case 2: // sent twice
				out = append(out, e, e)
			case 3: // cut in two
				k := int(op/6) % (len(c.Data) + 1)
				a, b := *c, *c
				a.Data, b.Data = c.Data[:k], c.Data[k:]
				b.Offset += uint64(k)
				out = append(out, testcapture.Event{Chunk: &a}, testcapture.Event{Chunk: &b})
			case 4: // re-sent with the previous chunk's bytes when contiguous
				if prev != nil && prev.Conn == c.Conn && prev.Dir == c.Dir && prev.Offset+uint64(len(prev.Data)) == c.Offset {
					m := *c
					m.Offset = prev.Offset
					m.Data = append(append([]byte(nil), prev.Data...), c.Data...)
					out = append(out, testcapture.Event{Chunk: &m})
				} else {
					out = append(out, e)
				}
			case 5: // swapped with the next event
				if n := len(out); n > 0 && i+1 < len(events) {
					out = append(out[:n-1], e, out[n-1])
				} else {
					out = append(out, e)
				}
			default:
				out = append(out, e)
			}
			prev = c
		}
		calls, _ := replay(out, h2.Config{})
		for _, c := range calls {
			if !c.Has(h2.FlagMethodUnknown) && !allPaths[c.Path] {
				t.Fatalf("a method not in the recording: %q", c.Path)
			}
			if c.EndNs < c.StartNs {
				t.Fatalf("ends before it starts: %+v", c)
			}
		}
	})
}

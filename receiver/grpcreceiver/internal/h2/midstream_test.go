// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// grpcGoConn is a connection as grpc-go writes it: one write per call and
// direction (the request's HEADERS and DATA, the response's HEADERS, DATA
// and trailers), real HPACK (every repeated field indexed, a request id
// inserted at every call). calls[i] are the chunks of call i.
type grpcGoConn struct {
	prefC, prefS []byte
	calls        [][2][]byte // [Egress, Ingress]
	paths        []string
}

func newGRPCGoConn(paths []string) *grpcGoConn {
	cw, sw := newWire(true), newWire(false)
	g := &grpcGoConn{prefC: cw.settings().take(), prefS: sw.settings().take(), paths: paths}
	for i, p := range paths {
		sid := uint32(2*i + 1)
		// grpc-go's order: :method, :scheme, :path, :authority, then the rest
		r := cw.headers(sid, false, 0, ":method", "POST", ":scheme", "http", ":path", p, ":authority", "svc:50051",
			"content-type", "application/grpc", "user-agent", "grpc-go/1.72.0", "te", "trailers",
			"x-request-id", "req-"+strconv.Itoa(i)).data(sid, 12, true).take()
		s := sw.headers(sid, false, 0, respHeaders...).data(sid, 20, false).
			headers(sid, true, 0, "grpc-status", "0", "grpc-message", "").take()
		g.calls = append(g.calls, [2][]byte{r, s})
	}
	return g
}

// joinAt feeds the calls from call k on to a tracker whose capture starts
// there (RoleUnknown, offsets of another base), each write one chunk.
func (g *grpcGoConn) joinAt(t *testing.T, k int) *conv {
	v := newConv(t, Config{}, RoleUnknown)
	v.off = [2]uint64{1 << 40, 12345}
	for _, c := range g.calls[k:] {
		v.send(Egress, c[0])
		v.send(Ingress, c[1])
	}
	v.tr.ConnClose(&ConnClose{Conn: v.id})
	return v
}

// TestMidStreamEveryCall: a grpc-go connection picked up mid-stream (the
// capture starts after its first calls): every call after the start
// becomes a call, the first ones too, whose request HEADERS came while the
// resynchronisation was still tentative.
func TestMidStreamEveryCall(t *testing.T) {
	paths := make([]string, 40)
	for i := range paths {
		paths[i] = "/pkg.Svc/" + string(rune('A'+i%3))
	}
	g := newGRPCGoConn(paths)
	for _, k := range []int{5, 6, 7} {
		v := g.joinAt(t, k)
		require.Equal(t, len(paths)-k, len(v.calls), "join at %d: every call after the start", k)
		for i, c := range v.calls {
			assert.Equal(t, uint32(2*(k+i)+1), c.StreamID)
			assert.Equal(t, SideClient, c.Side)
			assert.Equal(t, "POST", c.Method)
			assert.True(t, c.Has(FlagRequestEnded|FlagResponseHeaders), "call %d", k+i)
			assert.False(t, c.Has(FlagConnClosed), "call %d ended by its response", k+i)
			assert.Equal(t, 200, c.HTTPStatus)
		}
		st := v.stats()
		assert.Zero(t, st.StreamsUnmatched)
		assert.Zero(t, st.ResyncsRejected)
		assert.Positive(t, st.TentativeFramesApplied)
	}
}

// TestMidStreamPlaceholders: a method named by an HPACK entry inserted
// before the capture cannot be known; its calls share a placeholder that
// names the entry, stable as newer entries are inserted, one per method;
// a method first written after the start is learned.
func TestMidStreamPlaceholders(t *testing.T) {
	var paths []string
	for i := 0; i < 30; i++ {
		p := "/pkg.Svc/" + string(rune('A'+i%3))
		if i >= 15 && i%3 == 2 {
			p = "/pkg.Svc/D" // first written after the start: a literal
		}
		paths = append(paths, p)
	}
	g := newGRPCGoConn(paths)
	const k = 6
	v := g.joinAt(t, k)
	require.Equal(t, len(paths)-k, len(v.calls))
	byPath := map[string]string{}
	for i, c := range v.calls {
		p := paths[k+i]
		if p == "/pkg.Svc/D" {
			assert.Equal(t, p, c.Path, "call %d: learned", k+i)
			assert.Empty(t, c.MethodPlaceholder)
			continue
		}
		require.True(t, c.Has(FlagMethodUnknown), "call %d", k+i)
		require.NotEmpty(t, c.MethodPlaceholder, "call %d", k+i)
		if want, ok := byPath[p]; ok {
			assert.Equal(t, want, c.MethodPlaceholder, "call %d: stable", k+i)
		}
		byPath[p] = c.MethodPlaceholder
	}
	require.Len(t, byPath, 3)
	assert.NotEqual(t, byPath["/pkg.Svc/A"], byPath["/pkg.Svc/B"])
	assert.NotEqual(t, byPath["/pkg.Svc/B"], byPath["/pkg.Svc/C"])
	assert.NotEqual(t, byPath["/pkg.Svc/A"], byPath["/pkg.Svc/C"])
	st := v.stats()
	assert.Equal(t, st.MethodsUnknown, st.MethodPlaceholders)
	assert.Equal(t, uint64(19), st.MethodsUnknown)
}

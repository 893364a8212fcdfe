// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package h2_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/h2"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/spanmap"
	"github.com/otelcol-seq/otelcol-seq/receiver/grpcreceiver/internal/testcapture"
)

const (
	svc       = "grpc.testing.TestService"
	pathUnary = "/" + svc + "/UnaryCall"
	pathEmpty = "/" + svc + "/EmptyCall"
	pathSOut  = "/" + svc + "/StreamingOutputCall"
	pathBidi  = "/" + svc + "/FullDuplexCall"
)

var (
	clientProc = h2.Proc{PID: 1000, TID: 1001, StartNs: 5}
	serverProc = h2.Proc{PID: 2000, TID: 2001, StartNs: 6}
	allPaths   = map[string]bool{pathUnary: true, pathEmpty: true, pathSOut: true, pathBidi: true}
)

// testServer is grpc.testing.TestService, driven by request metadata:
// x-block makes a call wait for its end (cancel, deadline), x-big-resp
// sends that many bytes of response header metadata.
type testServer struct {
	testgrpc.UnimplementedTestServiceServer
}

func (testServer) EmptyCall(context.Context, *testgrpc.Empty) (*testgrpc.Empty, error) {
	return &testgrpc.Empty{}, nil
}

func (testServer) UnaryCall(ctx context.Context, r *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("x-big-resp"); len(v) > 0 {
		n, _ := strconv.Atoi(v[0])
		if err := grpc.SetHeader(ctx, metadata.Pairs("x-big", strings.Repeat("b", n))); err != nil {
			return nil, err
		}
	}
	if len(md.Get("x-block")) > 0 {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	if st := r.GetResponseStatus(); st != nil && st.Code != 0 {
		return nil, status.Error(codes.Code(st.Code), st.Message)
	}
	return &testgrpc.SimpleResponse{Payload: r.GetPayload()}, nil
}

func (testServer) StreamingOutputCall(r *testgrpc.StreamingOutputCallRequest, s grpc.ServerStreamingServer[testgrpc.StreamingOutputCallResponse]) error {
	for _, p := range r.GetResponseParameters() {
		if err := s.Send(&testgrpc.StreamingOutputCallResponse{Payload: &testgrpc.Payload{Body: make([]byte, p.GetSize())}}); err != nil {
			return err
		}
	}
	if md, _ := metadata.FromIncomingContext(s.Context()); len(md.Get("x-block")) > 0 {
		<-s.Context().Done()
		return s.Context().Err()
	}
	return nil
}

func (testServer) FullDuplexCall(s grpc.BidiStreamingServer[testgrpc.StreamingOutputCallRequest, testgrpc.StreamingOutputCallResponse]) error {
	for {
		r, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.Send(&testgrpc.StreamingOutputCallResponse{Payload: r.GetPayload()}); err != nil {
			return err
		}
	}
}

// harness is a real gRPC server and client over tapped TCP connections.
type harness struct {
	t      *testing.T
	rec    *testcapture.Recorder
	srv    *grpc.Server
	cc     *grpc.ClientConn
	client testgrpc.TestServiceClient
	served chan struct{}
}

func start(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, rec: testcapture.NewRecorder(), served: make(chan struct{})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	h.srv = grpc.NewServer()
	testgrpc.RegisterTestServiceServer(h.srv, testServer{})
	go func() {
		defer close(h.served)
		_ = h.srv.Serve(h.rec.Listener(l, serverProc))
	}()
	h.cc, err = grpc.NewClient("passthrough:///"+l.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(h.rec.Dialer(clientProc)))
	require.NoError(t, err)
	h.client = testgrpc.NewTestServiceClient(h.cc)
	t.Cleanup(h.stop)
	return h
}

// stop closes the client and the server; it returns the recorded events.
func (h *harness) stop() {
	_ = h.cc.Close()
	h.srv.Stop()
	<-h.served
}

func (h *harness) events() []testcapture.Event {
	h.stop()
	return h.rec.Events()
}

// replay feeds events to a new Tracker.
func replay(events []testcapture.Event, cfg h2.Config) ([]h2.Call, h2.Stats) {
	var calls []h2.Call
	tr := h2.NewTracker(cfg, func(c *h2.Call) { calls = append(calls, *c) }, nil)
	testcapture.Feed(tr, events)
	return calls, tr.Stats()
}

func bySide(calls []h2.Call, side h2.Side) []h2.Call {
	var out []h2.Call
	for _, c := range calls {
		if c.Side == side {
			out = append(out, c)
		}
	}
	return out
}

// noWrongMethod checks that every decoded path is one the test called.
func noWrongMethod(t *testing.T, calls []h2.Call) {
	t.Helper()
	for _, c := range calls {
		if c.Has(h2.FlagMethodUnknown) {
			assert.Empty(t, c.Path)
			continue
		}
		assert.True(t, allPaths[c.Path], "a path never called: %q", c.Path)
	}
}

func unaryWorkload(t *testing.T, h *harness, goroutines, perG int, padding int) {
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perG; i++ {
				ctx := metadata.AppendToOutgoingContext(context.Background(),
					"x-id", strconv.Itoa(g*perG+i)+strings.Repeat("p", padding))
				_, err := h.client.UnaryCall(ctx, &testgrpc.SimpleRequest{Payload: &testgrpc.Payload{Body: []byte("hi")}})
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
}

func TestGRPCUnaryConcurrent(t *testing.T) {
	h := start(t)
	const n = 2000
	unaryWorkload(t, h, 8, n/8, 0)
	events := h.events()
	for _, stripped := range []bool{true, false} {
		ev := events
		if stripped {
			ev = testcapture.Strip(events, 0)
		}
		calls, st := replay(ev, h2.Config{})
		for _, side := range []h2.Side{h2.SideClient, h2.SideServer} {
			cs := bySide(calls, side)
			require.Len(t, cs, n, "side %d stripped %v", side, stripped)
			seen := map[[2]uint64]bool{}
			for _, c := range cs {
				assert.Equal(t, pathUnary, c.Path)
				assert.Equal(t, svc, c.Service)
				assert.Equal(t, "UnaryCall", c.RPC)
				assert.Equal(t, 0, c.GRPCStatus)
				assert.Equal(t, 200, c.HTTPStatus)
				assert.Equal(t, h2.ProtoGRPC, c.Protocol)
				assert.Equal(t, uint32(1), c.ReqDataFrames)
				assert.Equal(t, uint32(1), c.RespDataFrames)
				assert.LessOrEqual(t, c.StartNs, c.EndNs)
				assert.True(t, c.PeerFound)
				assert.True(t, c.ClientConnKnown)
				assert.Zero(t, c.Flags&^(h2.FlagRequestEnded|h2.FlagResponseHeaders))
				key := [2]uint64{uint64(c.ClientConn), uint64(c.StreamID)}
				assert.False(t, seen[key], "one call per stream")
				seen[key] = true
				if side == h2.SideClient {
					assert.Equal(t, clientProc.PID, c.Proc.PID)
				} else {
					assert.Equal(t, serverProc.PID, c.Proc.PID)
				}
			}
		}
		assert.Zero(t, st.GapsTotal())
		assert.Zero(t, st.HPACKErrors)
		assert.Zero(t, st.MethodsUnknown)
		assert.Zero(t, st.StreamsUnmatched)
		checkSpans(t, calls, n)
		assert.Equal(t, uint64(2), st.ConnsTracked-st.ConnsWithoutOpen, "a read recorded after its close starts an unknown connection")
		if stripped {
			assert.Positive(t, st.BytesHoles)
		} else {
			assert.Zero(t, st.BytesHoles)
		}
	}
}

// checkSpans maps calls to spans: every server span is the child of its
// client's span, in its trace, and no two spans share an id.
func checkSpans(t *testing.T, calls []h2.Call, n int) {
	t.Helper()
	m := spanmap.New(spanmap.Config{BootID: "boot"})
	ss := ptrace.NewSpanSlice()
	for i := range calls {
		m.Append(ss, &calls[i])
	}
	clients := map[pcommon.SpanID]pcommon.TraceID{}
	ids := map[pcommon.SpanID]bool{}
	for i := 0; i < ss.Len(); i++ {
		s := ss.At(i)
		assert.False(t, ids[s.SpanID()], "span ids are unique")
		ids[s.SpanID()] = true
		if s.Kind() == ptrace.SpanKindClient {
			clients[s.SpanID()] = s.TraceID()
			assert.True(t, s.ParentSpanID().IsEmpty())
		}
	}
	require.Len(t, clients, n)
	for i := 0; i < ss.Len(); i++ {
		if s := ss.At(i); s.Kind() == ptrace.SpanKindServer {
			tr, ok := clients[s.ParentSpanID()]
			if assert.True(t, ok, "the server span's parent is a client span") {
				assert.Equal(t, tr, s.TraceID())
			}
			assert.Equal(t, pathUnary[1:], s.Name())
		}
	}
}

func TestGRPCStreaming(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	so, err := h.client.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{
		ResponseParameters: []*testgrpc.ResponseParameters{{Size: 10}, {Size: 20000}, {Size: 30}, {Size: 1}, {Size: 5}},
	})
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		_, err = so.Recv()
		require.NoError(t, err)
	}
	_, err = so.Recv()
	require.ErrorIs(t, err, io.EOF)

	bidi, err := h.client.FullDuplexCall(ctx)
	require.NoError(t, err)
	for i := 0; i < 10; i++ {
		require.NoError(t, bidi.Send(&testgrpc.StreamingOutputCallRequest{Payload: &testgrpc.Payload{Body: []byte("m")}}))
		_, err = bidi.Recv()
		require.NoError(t, err)
	}
	require.NoError(t, bidi.CloseSend())
	_, err = bidi.Recv()
	require.ErrorIs(t, err, io.EOF)

	calls, st := replay(testcapture.Strip(h.events(), 0), h2.Config{})
	require.Len(t, calls, 4)
	for _, c := range calls {
		assert.Equal(t, 0, c.GRPCStatus)
		assert.True(t, c.Has(h2.FlagStreaming|h2.FlagRequestEnded))
		switch c.Path {
		case pathSOut:
			assert.GreaterOrEqual(t, c.RespDataFrames, uint32(5))
			assert.GreaterOrEqual(t, c.RespDataBytes, uint64(20000))
		case pathBidi:
			assert.GreaterOrEqual(t, c.ReqDataFrames, uint32(10))
			assert.GreaterOrEqual(t, c.RespDataFrames, uint32(10))
		default:
			t.Errorf("path %q", c.Path)
		}
	}
	assert.Zero(t, st.GapsTotal())
}

func TestGRPCStatusCodes(t *testing.T) {
	h := start(t)
	for code := 1; code <= 16; code++ {
		_, err := h.client.UnaryCall(context.Background(), &testgrpc.SimpleRequest{
			ResponseStatus: &testgrpc.EchoStatus{Code: int32(code), Message: "why: " + strconv.Itoa(code) + " 100%"},
		})
		require.Equal(t, codes.Code(code), status.Code(err))
	}
	_, err := h.cc.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true}, "/no.Such/Method")
	require.NoError(t, err) // the error comes with the first receive; the call is ended by close below
	calls, _ := replay(testcapture.Strip(h.events(), 0), h2.Config{})
	for _, side := range []h2.Side{h2.SideClient, h2.SideServer} {
		got := map[int]string{}
		for _, c := range bySide(calls, side) {
			if c.Path == "/no.Such/Method" {
				continue
			}
			require.Equal(t, pathUnary, c.Path)
			got[c.GRPCStatus] = c.GRPCMessage
			assert.Zero(t, c.RespDataFrames, "Trailers-Only")
			assert.Equal(t, 200, c.HTTPStatus)
		}
		for code := 1; code <= 16; code++ {
			assert.Equal(t, "why: "+strconv.Itoa(code)+" 100%", got[code], "code %d side %d", code, side)
		}
	}
}

func TestGRPCCancelAndDeadline(t *testing.T) {
	h := start(t)
	ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(context.Background(), "x-block", "1"))
	so, err := h.client.StreamingOutputCall(ctx, &testgrpc.StreamingOutputCallRequest{
		ResponseParameters: []*testgrpc.ResponseParameters{{Size: 10}},
	})
	require.NoError(t, err)
	_, err = so.Recv()
	require.NoError(t, err)
	cancel()
	_, err = so.Recv()
	require.Equal(t, codes.Canceled, status.Code(err))

	dctx, dcancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "x-block", "1"), 200*time.Millisecond)
	defer dcancel()
	_, err = h.client.UnaryCall(dctx, &testgrpc.SimpleRequest{})
	require.Equal(t, codes.DeadlineExceeded, status.Code(err))
	// a call after them still works and is seen
	_, err = h.client.EmptyCall(context.Background(), &testgrpc.Empty{})
	require.NoError(t, err)

	calls, st := replay(testcapture.Strip(h.events(), 0), h2.Config{})
	require.Len(t, calls, 6)
	for _, c := range calls {
		switch c.Path {
		case pathSOut:
			assert.True(t, c.Has(h2.FlagCancelled|h2.FlagReset), "side %d", c.Side)
			assert.Equal(t, 1, c.GRPCStatus)
		case pathUnary:
			assert.Equal(t, 200*time.Millisecond, c.Timeout.Round(100*time.Millisecond))
			if c.Side == h2.SideClient {
				assert.Equal(t, 4, c.GRPCStatus, "%+v", c)
			} else { // the server's own deadline or the client's cancel, whichever came first
				assert.Contains(t, []int{1, 4}, c.GRPCStatus)
			}
		case pathEmpty:
			assert.Equal(t, 0, c.GRPCStatus)
		default:
			t.Errorf("path %q", c.Path)
		}
	}
	assert.Positive(t, st.Resets)
	assert.Zero(t, st.GapsTotal())
}

func TestGRPCLargeMetadata(t *testing.T) {
	h := start(t)
	ctx := metadata.AppendToOutgoingContext(context.Background(),
		"x-big-req", strings.Repeat("a", 40000), "x-big-resp", "30000")
	_, err := h.client.UnaryCall(ctx, &testgrpc.SimpleRequest{})
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		_, err = h.client.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
		require.NoError(t, err)
	}
	events := h.events()
	calls, st := replay(testcapture.Strip(events, 0), h2.Config{})
	require.Len(t, calls, 8)
	for _, c := range calls {
		assert.Equal(t, pathUnary, c.Path)
		assert.Equal(t, 0, c.GRPCStatus)
	}
	// more than a frame of 16 KiB (grpc-go's frame size): CONTINUATION frames
	assert.Greater(t, calls[0].ReqHeaderBytes, uint32(16384))
	assert.Greater(t, calls[1].ReqHeaderBytes, uint32(16384))
	assert.Greater(t, calls[0].RespHeaderBytes, uint32(16384))
	assert.Zero(t, st.HeaderBlocksTooLarge)

	// a smaller bound: the big blocks are dropped, their tables lost; no
	// wrong method, and each direction decodes again from an empty table
	calls, st = replay(testcapture.Strip(events, 0), h2.Config{MaxHeaderBlock: 16 << 10})
	require.Len(t, calls, 8)
	noWrongMethod(t, calls)
	assert.Equal(t, uint64(4), st.HeaderBlocksTooLarge, "the request's and the response's, each end")
	assert.Positive(t, st.MethodsUnknown)
	assert.Zero(t, st.GapsTotal())

	// the kernel cuts header payloads at 4 KiB: gaps, not wrong methods
	calls, st = replay(testcapture.Strip(events, 4096), h2.Config{})
	noWrongMethod(t, calls)
	assert.Positive(t, st.Gaps[h2.GapHeaderBlock])
}

func TestGRPCGoAwayAndStop(t *testing.T) {
	h := start(t)
	bidi, err := h.client.FullDuplexCall(context.Background())
	require.NoError(t, err)
	require.NoError(t, bidi.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = bidi.Recv()
	require.NoError(t, err)
	stopped := make(chan struct{})
	go func() {
		h.srv.GracefulStop() // GOAWAY, then waits for the open stream
		close(stopped)
	}()
	// the stream goes on after the GOAWAY
	require.NoError(t, bidi.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = bidi.Recv()
	require.NoError(t, err)
	require.NoError(t, bidi.CloseSend())
	_, err = bidi.Recv()
	require.ErrorIs(t, err, io.EOF)
	<-stopped
	calls, st := replay(testcapture.Strip(h.events(), 0), h2.Config{})
	require.Len(t, calls, 2)
	for _, c := range calls {
		assert.Equal(t, pathBidi, c.Path)
		assert.Equal(t, 0, c.GRPCStatus)
		assert.False(t, c.Has(h2.FlagGoAway))
	}
	assert.Positive(t, st.GoAways)

	// Stop with a stream open: the connection closes mid-stream
	h = start(t)
	bidi, err = h.client.FullDuplexCall(context.Background())
	require.NoError(t, err)
	require.NoError(t, bidi.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = bidi.Recv()
	require.NoError(t, err)
	h.srv.Stop()
	_, err = bidi.Recv()
	require.Error(t, err)
	calls, _ = replay(testcapture.Strip(h.events(), 0), h2.Config{})
	require.Len(t, calls, 2)
	for _, c := range calls {
		assert.Equal(t, pathBidi, c.Path)
		assert.NotEqual(t, 0, c.GRPCStatus)
		assert.True(t, c.Has(h2.FlagConnClosed) || c.Has(h2.FlagReset) || c.Has(h2.FlagGoAway), "%+v", c)
	}
}

// joinAt makes the connections look like the capture started at event k:
// their opens say RoleUnknown, offsets move by 1<<40, the chunks before k
// are not seen, and the first chunk of each direction after k loses its
// first skip bytes (it may begin inside a frame).
func joinAt(events []testcapture.Event, k int, skip int) []testcapture.Event {
	var out []testcapture.Event
	first := map[[2]uint64]bool{}
	for i, e := range events {
		switch {
		case e.Open != nil:
			o := *e.Open
			o.Role = h2.RoleUnknown
			out = append(out, testcapture.Event{Open: &o})
		case e.Chunk != nil:
			if i < k {
				continue
			}
			c := *e.Chunk
			if key := [2]uint64{uint64(c.Conn), uint64(c.Dir)}; !first[key] {
				first[key] = true
				if len(c.Data) <= skip {
					continue
				}
				c.Data = c.Data[skip:]
				c.Offset += uint64(skip)
			}
			c.Offset += 1 << 40
			out = append(out, testcapture.Event{Chunk: &c})
		default:
			out = append(out, e)
		}
	}
	return out
}

func TestGRPCJoinMidway(t *testing.T) {
	h := start(t)
	unaryWorkload(t, h, 1, 300, 300) // unique, long metadata churns the HPACK tables
	events := testcapture.Strip(h.events(), 0)
	for _, cut := range []int{len(events) / 10, len(events) / 3, len(events) / 2} {
		calls, st := replay(joinAt(events, cut, 3), h2.Config{})
		noWrongMethod(t, calls)
		assert.Positive(t, st.Resyncs)
		decoded := 0
		for _, c := range calls {
			if !c.Has(h2.FlagMethodUnknown) {
				decoded++
				assert.Contains(t, []int{0, -1}, c.GRPCStatus, "OK or not decodable")
			}
		}
		assert.Positive(t, decoded, "cut %d: the table churned, paths decode again", cut)
		assert.Positive(t, st.MethodsUnknown, "cut %d: indexed paths right after the join", cut)
		assert.Less(t, len(calls), 600)
		assert.Greater(t, len(calls), 200)
		unknown := 0
		for _, c := range calls[len(calls)/2:] {
			if c.Has(h2.FlagMethodUnknown) {
				unknown++
			}
		}
		assert.Zero(t, unknown, "cut %d: the later calls all decode", cut)
	}
}

func TestGRPCGap(t *testing.T) {
	h := start(t)
	unaryWorkload(t, h, 2, 100, 300)
	events := testcapture.Strip(h.events(), 0)
	// drop a chunk with a header block in the middle of each client request stream
	var dropped int
	var out []testcapture.Event
	for i, e := range events {
		if c := e.Chunk; c != nil && i > len(events)/2 && dropped < 2 && len(c.Data) > 9 && c.Dir == h2.Egress &&
			c.Proc.PID == clientProc.PID && c.Data[3] == h2.FrameHeaders {
			dropped++
			continue
		}
		out = append(out, e)
	}
	require.Equal(t, 2, dropped)
	calls, st := replay(out, h2.Config{})
	noWrongMethod(t, calls)
	assert.Positive(t, st.GapsTotal())
	assert.Positive(t, st.Resyncs)
	client := bySide(calls, h2.SideClient)
	assert.Less(t, len(client), 200)
	assert.Greater(t, len(client), 150)
	assert.Positive(t, st.MethodsUnknown+st.HeaderBlocksUnverified+st.HPACKErrors, "what the gap hid is not guessed")
	last := client[len(client)-1]
	assert.Equal(t, pathUnary, last.Path, "decoded again after the table churned")
}

func TestNotHTTP2Conn(t *testing.T) {
	rec := testcapture.NewRecorder()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	tl := rec.Listener(l, serverProc)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := tl.Accept()
		if err != nil {
			return
		}
		_, _ = io.Copy(c, c)
		_ = c.Close()
	}()
	c, err := rec.Dialer(clientProc)(context.Background(), l.Addr().String())
	require.NoError(t, err)
	buf := make([]byte, 64)
	for i := 0; i < 3; i++ {
		_, err = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		require.NoError(t, err)
		_, err = io.ReadAtLeast(c, buf, 10)
		require.NoError(t, err)
	}
	require.NoError(t, c.Close())
	<-done
	require.NoError(t, l.Close())
	calls, st := replay(rec.Events(), h2.Config{})
	assert.Empty(t, calls)
	assert.Equal(t, uint64(2), st.ConnsIgnoredNotHTTP2)
	assert.Zero(t, st.FramesParsed)
	assert.Positive(t, st.ChunksIgnored)
}

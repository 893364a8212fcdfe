// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Package grpctest is a real gRPC server and client for the grpc receiver's
// tests: grpc-go's interop TestService (grpc_testing), served on 127.0.0.1,
// with a small implementation of its own (no cloud dependencies): UnaryCall
// answers with the status the request asks for, StreamingOutputCall sends
// one response per ResponseParameters after its IntervalUs. Test code only.
package grpctest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// Method names as they appear in :path.
const (
	UnaryMethod     = "/grpc.testing.TestService/UnaryCall"
	StreamingMethod = "/grpc.testing.TestService/StreamingOutputCall"
	Service         = "grpc.testing.TestService"
)

type server struct {
	testgrpc.UnimplementedTestServiceServer
}

func (server) UnaryCall(_ context.Context, in *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	if st := in.GetResponseStatus(); st != nil && st.GetCode() != 0 {
		return nil, status.Error(codes.Code(st.GetCode()), st.GetMessage())
	}
	return &testgrpc.SimpleResponse{Payload: &testgrpc.Payload{Body: make([]byte, in.GetResponseSize())}}, nil
}

func (server) StreamingOutputCall(in *testgrpc.StreamingOutputCallRequest, stream testgrpc.TestService_StreamingOutputCallServer) error {
	for _, p := range in.GetResponseParameters() {
		if d := time.Duration(p.GetIntervalUs()) * time.Microsecond; d > 0 {
			select {
			case <-time.After(d):
			case <-stream.Context().Done():
				return stream.Context().Err()
			}
		}
		if err := stream.Send(&testgrpc.StreamingOutputCallResponse{Payload: &testgrpc.Payload{Body: make([]byte, p.GetSize())}}); err != nil {
			return err
		}
	}
	return nil
}

// Server is a running TestService server.
type Server struct {
	Addr string
	srv  *grpc.Server
	done chan struct{}
}

// Start serves the TestService on 127.0.0.1 (a free port).
func Start() (*Server, error) { return start() }

// StartTLS serves it over TLS (HTTP/2 by ALPN) with a fresh self-signed
// certificate for 127.0.0.1.
func StartTLS() (*Server, error) {
	cert, err := SelfSigned()
	if err != nil {
		return nil, err
	}
	return start(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})))
}

// SelfSigned returns a certificate for 127.0.0.1 and localhost, valid for a day.
func SelfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "grpctest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func start(opts ...grpc.ServerOption) (*Server, error) {
	lis, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: lis.Addr().String(), srv: grpc.NewServer(opts...), done: make(chan struct{})}
	testgrpc.RegisterTestServiceServer(s.srv, server{})
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(lis)
	}()
	return s, nil
}

// Stop closes the listener and every connection, and waits for Serve to return.
func (s *Server) Stop() {
	s.srv.Stop()
	<-s.done
}

// Dial connects a client (one HTTP/2 connection, made at once).
func Dial(addr string) (*grpc.ClientConn, testgrpc.TestServiceClient, error) {
	return dial(addr, insecure.NewCredentials())
}

// DialTLS connects a client over TLS (HTTP/2 by ALPN), taking any server
// certificate (StartTLS's is self-signed).
func DialTLS(addr string) (*grpc.ClientConn, testgrpc.TestServiceClient, error) {
	return dial(addr, credentials.NewTLS(&tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12})) //nolint:gosec // test servers only
}

func dial(addr string, creds credentials.TransportCredentials) (*grpc.ClientConn, testgrpc.TestServiceClient, error) {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, nil, err
	}
	cc.Connect()
	return cc, testgrpc.NewTestServiceClient(cc), nil
}

// StartDialed starts a server and connects a client to it; both are closed
// when the test ends.
func StartDialed(tb testing.TB) (*Server, testgrpc.TestServiceClient) {
	tb.Helper()
	srv, err := Start()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Stop)
	cc, client, err := Dial(srv.Addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cc.Close() })
	return srv, client
}

// Unary calls UnaryCall; code != OK asks the server to fail with it.
func Unary(ctx context.Context, c testgrpc.TestServiceClient, code codes.Code, msg string) error {
	req := &testgrpc.SimpleRequest{ResponseSize: 16, Payload: &testgrpc.Payload{Body: []byte("ping")}}
	if code != codes.OK {
		req.ResponseStatus = &testgrpc.EchoStatus{Code: int32(code), Message: msg}
	}
	_, err := c.UnaryCall(ctx, req)
	return err
}

// UnaryConcurrently makes calls OK unary calls on c from workers
// goroutines at once (on c's one connection when it has one) and returns
// at once; wait waits for them and says how many failed.
func UnaryConcurrently(ctx context.Context, c testgrpc.TestServiceClient, calls, workers int) (wait func() int64) {
	var failed atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < calls; i += workers {
				if Unary(ctx, c, codes.OK, "") != nil {
					failed.Add(1)
				}
			}
		}()
	}
	return func() int64 {
		wg.Wait()
		return failed.Load()
	}
}

// Stream calls StreamingOutputCall for n responses, interval apart, and reads them all.
func Stream(ctx context.Context, c testgrpc.TestServiceClient, n int, interval time.Duration) error {
	req := &testgrpc.StreamingOutputCallRequest{}
	for range n {
		req.ResponseParameters = append(req.ResponseParameters, &testgrpc.ResponseParameters{Size: 8, IntervalUs: int32(interval / time.Microsecond)})
	}
	st, err := c.StreamingOutputCall(ctx, req)
	if err != nil {
		return err
	}
	for {
		if _, err := st.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// TestService is the server's implementation, for a grpc.Server of the
// caller's own (a listener that counts bytes, say).
func TestService() testgrpc.TestServiceServer { return server{} }

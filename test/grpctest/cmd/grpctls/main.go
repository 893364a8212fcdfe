// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

// Command grpctls is a grpc-go server and client in one process, over TLS
// (Go crypto/tls both ends, one HTTP/2 connection), for the grpc
// receiver's TLS tests: a Go executable of its own, whose crypto/tls the
// capture probes. It prints the server's address, waits for a line on its
// standard input when -wait is given, makes -calls unary calls -workers at
// a time and one that fails with NOT_FOUND, closes the connection and
// prints what it measured as one JSON line. Test code only.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/otelcol-seq/otelcol-seq/test/grpctest"
)

func cpuNs() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func main() {
	calls := flag.Int("calls", 200, "unary calls that succeed")
	workers := flag.Int("workers", 8, "calls at a time, on the one connection")
	wait := flag.Bool("wait", false, "wait for a line on stdin before connecting")
	flag.Parse()
	if err := run(*calls, *workers, *wait); err != nil {
		fmt.Fprintln(os.Stderr, "grpctls:", err)
		os.Exit(1)
	}
}

func run(calls, workers int, wait bool) error {
	srv, err := grpctest.StartTLS()
	if err != nil {
		return err
	}
	defer srv.Stop()
	fmt.Println(srv.Addr)
	if wait {
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return fmt.Errorf("wait: %w", err)
		}
	}
	cc, client, err := grpctest.DialTLS(srv.Addr)
	if err != nil {
		return err
	}
	ctx := context.Background()
	// The handshake and the first call before the clock starts.
	if err := grpctest.Unary(ctx, client, codes.OK, ""); err != nil {
		return err
	}
	wall, cpu := time.Now(), cpuNs()
	failed := grpctest.UnaryConcurrently(ctx, client, calls-1, workers)()
	res := grpctest.TLSResult{PID: os.Getpid(), Calls: calls, Timed: calls - 1, Failed: failed, WallNs: int64(time.Since(wall)), CPUNs: cpuNs() - cpu}
	if err := grpctest.Unary(ctx, client, codes.NotFound, "no such thing"); err == nil {
		return fmt.Errorf("the NOT_FOUND call succeeded")
	}
	if err := cc.Close(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package capture

// Counters are the programs' own counts (struct h2_stats, summed over CPUs)
// and the ring producers' (struct ring_stats).
type Counters struct {
	SockCalls        uint64 // socket send/recv calls seen
	NotTCP           uint64 // ... on sockets that are not TCP over IPv4/IPv6
	NotSocket        uint64 // hook syscalls: read/write calls on other fds
	FdUnreadable     uint64 // hook syscalls: the fd table walk failed
	Unsupported      uint64 // calls on tracked connections from sendmmsg, sendfile, splice, io_uring, the kernel
	Peek             uint64 // MSG_PEEK reads skipped
	ConnsEstablished uint64
	ConnsPredating   uint64 // first seen mid-stream (established before the capture, or evicted)
	ConnsH2          uint64
	ConnsNotH2       uint64
	ConnsClosed      uint64
	Frames           uint64
	BytesCopied      uint64
	BytesSkipped     uint64 // payloads not copied (DATA, PING, WINDOW_UPDATE)
	HeadersCut       uint64 // frames cut at the header cap
	BytesCut         uint64
	Desync           uint64 // a direction lost its frame boundaries
	Resync           uint64 // ... and found them again
	DesyncBytes      uint64 // bytes skipped out of sync
	LoopBound        uint64 // calls with more frames than the walk's bound
	ReadFault        uint64 // user memory unreadable
	Busy             uint64 // calls skipped: the CPU's staging buffer in use
	Records          uint64 // records committed
	IovCut           uint64 // iovec arrays longer than the bound
	TLSCalls         uint64 // OpenSSL SSL_write / SSL_read (and _ex) calls that moved bytes (tls)
	ConnsTLS         uint64 // TLS sessions (SSL objects, Go *tls.Conn) seen
	GoTLSCalls       uint64 // Go crypto/tls (*Conn).Write / Read calls that moved bytes (tls)
	GoTLSErrors      uint64 // Reads that returned an error
	TLSAfterClose    uint64 // TLS calls on a closed session, not a new one's start: skipped
	TLSFilesFailed   uint64 // executables and libssl files that could not be parsed or probed (tls; counted in user space)
	// Of TLSFilesFailed: files whose tables declare bytes the file does not
	// hold (sparse, or past its end), and tables over their caps.
	TLSFilesNotHeld, TLSFilesTooLarge uint64
	TLSFailedUnlisted                 uint64 // failed files not listed (the lists of why hold 256)
	TLSProcsRelooked                  uint64 // processes looked at again: their pid reused, or an exec of another file
	TLSProcsUnremembered              uint64 // processes not remembered (more live than the set holds): looked at again next time
	TLSFilesForgotten                 uint64 // files seen but not probed, forgotten (more than the set holds): parsed again if seen again
	NotH2Calls                        uint64 // calls on connections known not HTTP/2: skipped after one lookup
	PromoteFailed                     uint64 // HTTP/2 connections not moved into the HTTP/2 map (never expected)
	Throttled                         uint64 // calls not walked: their connection had copied its share of the ring (Options.Rate)
	ThrottledBytes                    uint64 // their bytes
	TLSSock                           uint64 // TLS sessions opened with their TCP socket found (ids across hosts)
	TLSNoSock                         uint64 // ... without (ids local to the host)
	ThrottledUser                     uint64 // calls not walked: their user (uid) had spent its share of the ring (Options.UserRate)
	ThrottledUserBytes                uint64 // their bytes
	FrameTokens                       uint64 // tokens the shares charged for frames and HTTP/1.x calls ((frames walked + calls) x Options.FrameCost)
	ConnsConfirmed                    uint64 // HTTP/2 connections admitted into the kernel's HTTP/2 map: a call (HEADERS frame) seen
	ConnsH1                           uint64 // connections found to speak HTTP/1.x
	H1Calls                           uint64 // calls on HTTP/1.x connections walked (their first and last bytes copied)
	SelfCalls                         uint64 // calls of the collector itself (Options.SkipPID), skipped

	Tickets        uint64 // ring tickets claimed
	Overrun        uint64 // slots skipped: the ring lapped its reader
	NoSlot         uint64
	OutputFailed   uint64 // tickets whose ring buffer output failed (Options.NoFetch: the ring buffer was full)
	Doorbells      uint64 // wake-ups sent to the parked reader (each paid by the application that committed)
	DoorbellFailed uint64

	// ProgMisses are program runs the kernel skipped because the same program
	// was already running on that CPU (preempted mid-run): their calls' bytes
	// are missed, and the connection's next call finds the hole (desync).
	ProgMisses uint64
}

func (c *Counters) add(p h2H2Stats) {
	c.SockCalls += p.SockCalls
	c.NotTCP += p.NotTcp
	c.NotSocket += p.NotSocket
	c.FdUnreadable += p.FdUnreadable
	c.Unsupported += p.Unsupported
	c.Peek += p.Peek
	c.ConnsEstablished += p.ConnsEstablished
	c.ConnsPredating += p.ConnsPredating
	c.ConnsH2 += p.ConnsH2
	c.ConnsNotH2 += p.ConnsNotH2
	c.ConnsClosed += p.ConnsClosed
	c.Frames += p.Frames
	c.BytesCopied += p.BytesCopied
	c.BytesSkipped += p.BytesSkipped
	c.HeadersCut += p.HeadersCut
	c.BytesCut += p.BytesCut
	c.Desync += p.Desync
	c.Resync += p.Resync
	c.DesyncBytes += p.DesyncBytes
	c.LoopBound += p.LoopBound
	c.ReadFault += p.ReadFault
	c.Busy += p.Busy
	c.Records += p.Records
	c.IovCut += p.IovCut
	c.TLSCalls += p.TlsCalls
	c.ConnsTLS += p.ConnsTls
	c.GoTLSCalls += p.GoTlsCalls
	c.GoTLSErrors += p.GoTlsErrors
	c.TLSAfterClose += p.TlsAfterClose
	c.NotH2Calls += p.NotH2Calls
	c.PromoteFailed += p.PromoteFailed
	c.Throttled += p.Throttled
	c.ThrottledBytes += p.ThrottledBytes
	c.TLSSock += p.TlsSock
	c.TLSNoSock += p.TlsNoSock
	c.ThrottledUser += p.ThrottledUser
	c.ThrottledUserBytes += p.ThrottledUserBytes
	c.FrameTokens += p.FrameTokens
	c.ConnsConfirmed += p.ConnsConfirmed
	c.ConnsH1 += p.ConnsH1
	c.H1Calls += p.H1Calls
	c.SelfCalls += p.SelfCalls
}

// Named lists the counters by a stable snake_case name, for self-telemetry.
func (c Counters) Named() []NamedCounter {
	return []NamedCounter{
		{"sock_calls", c.SockCalls}, {"not_tcp", c.NotTCP}, {"not_socket", c.NotSocket},
		{"fd_unreadable", c.FdUnreadable}, {"unsupported_call", c.Unsupported}, {"peek", c.Peek},
		{"conns_established", c.ConnsEstablished}, {"conns_predating", c.ConnsPredating},
		{"conns_http2", c.ConnsH2}, {"conns_not_http2", c.ConnsNotH2}, {"conns_closed", c.ConnsClosed},
		{"frames", c.Frames}, {"bytes_copied", c.BytesCopied}, {"bytes_skipped", c.BytesSkipped},
		{"headers_cut", c.HeadersCut}, {"bytes_cut", c.BytesCut}, {"desync", c.Desync},
		{"resync", c.Resync}, {"desync_bytes", c.DesyncBytes}, {"loop_bound", c.LoopBound},
		{"read_fault", c.ReadFault}, {"busy", c.Busy}, {"records", c.Records}, {"iov_cut", c.IovCut},
		{"tls_calls", c.TLSCalls}, {"conns_tls", c.ConnsTLS}, {"go_tls_calls", c.GoTLSCalls},
		{"go_tls_errors", c.GoTLSErrors}, {"tls_after_close", c.TLSAfterClose},
		{"tls_files_failed", c.TLSFilesFailed}, {"tls_files_not_held", c.TLSFilesNotHeld},
		{"tls_files_too_large", c.TLSFilesTooLarge}, {"tls_failed_unlisted", c.TLSFailedUnlisted},
		{"tls_procs_relooked", c.TLSProcsRelooked}, {"tls_procs_unremembered", c.TLSProcsUnremembered},
		{"tls_files_forgotten", c.TLSFilesForgotten},
		{"not_http2_calls", c.NotH2Calls}, {"promote_failed", c.PromoteFailed},
		{"throttled", c.Throttled}, {"throttled_bytes", c.ThrottledBytes},
		{"tls_sock", c.TLSSock}, {"tls_no_sock", c.TLSNoSock},
		{"throttled_user", c.ThrottledUser}, {"throttled_user_bytes", c.ThrottledUserBytes},
		{"frame_tokens", c.FrameTokens}, {"conns_confirmed", c.ConnsConfirmed},
		{"conns_http1", c.ConnsH1}, {"http1_calls", c.H1Calls}, {"self_calls", c.SelfCalls},
		{"tickets", c.Tickets}, {"ring_overrun", c.Overrun}, {"ring_no_slot", c.NoSlot},
		{"ring_output_failed", c.OutputFailed},
		{"doorbells", c.Doorbells}, {"doorbell_failed", c.DoorbellFailed}, {"prog_recursion_misses", c.ProgMisses},
	}
}

// NamedCounter is one counter of Counters.Named.
type NamedCounter struct {
	Name  string
	Value uint64
}

// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
)

const (
	// maxRecordBytes bounds one stdout line (a printed map can be large).
	maxRecordBytes = 16 << 20
	// maxStderrBytes bounds one stderr line.
	maxStderrBytes = 64 << 10
	// stderrTailLines: the last stderr lines quoted in a start failure.
	stderrTailLines = 20
	// partialLineIdle: a partial printed line (no newline yet) is emitted
	// as it is after this long without more text.
	partialLineIdle = time.Second
	// drainTimeout: how long the pipes are read after bpftrace is reaped
	// (something that escaped its process group may hold them open).
	drainTimeout = 2 * time.Second
)

// memlockNoise is the start of the line bpftrace 0.17 prints on every start
// where it cannot raise RLIMIT_MEMLOCK, which kernels since 5.11 do not need
// (BPF memory is accounted to the cgroup): harmless, kept as a WARN record
// but left out of failure messages.
const memlockNoise = "couldn't set RLIMIT_MEMLOCK"

// script supervises one ScriptConfig's bpftrace process.
type script struct {
	r    *Runner
	spec *scriptSpec
	log  *zap.Logger

	restarts, startFailures, lostEvents, parseErrors atomic.Uint64
	cutLine, cutRecord, cutBudget                    atomic.Uint64
	redacted                                         atomic.Uint64 // values replaced (spec.redactor)

	unmappedMu sync.Mutex
	unmapped   map[string]uint64 // by record type: Counters.Unmapped

	warnMu sync.Mutex
	warned map[string]bool // warnings logged once per script
}

// warnOnce logs msg at WARN the first time key is seen.
func (s *script) warnOnce(key, msg string, fields ...zap.Field) {
	s.warnMu.Lock()
	seen := s.warned[key]
	s.warned[key] = true
	s.warnMu.Unlock()
	if !seen {
		s.log.Warn(msg, fields...)
	}
}

// redact applies the script's redaction to a line that leaves as a log
// record, counting the values replaced.
func (s *script) redact(text string) string {
	if s.spec.redactor == nil {
		return text
	}
	out, n := s.spec.redactor.Line(text)
	if n > 0 {
		s.redacted.Add(uint64(n))
	}
	return out
}

// maxUnmappedTypes bounds the record types Counters.Unmapped tells apart;
// further ones are counted as "other".
const maxUnmappedTypes = 32

// countUnmapped counts one record of type typ that could not be mapped.
func (s *script) countUnmapped(typ string) {
	s.unmappedMu.Lock()
	defer s.unmappedMu.Unlock()
	if s.unmapped == nil {
		s.unmapped = map[string]uint64{}
	}
	if _, ok := s.unmapped[typ]; !ok && len(s.unmapped) >= maxUnmappedTypes {
		typ = "other"
	}
	s.unmapped[typ]++
}

// cutCounts returns Counters.Cut.
func (s *script) cutCounts() map[string]uint64 {
	var out map[string]uint64
	for reason, n := range map[string]uint64{
		CutLineTooLong: s.cutLine.Load(), CutRecordTooLong: s.cutRecord.Load(), CutBudget: s.cutBudget.Load(),
	} {
		if n > 0 {
			if out == nil {
				out = map[string]uint64{}
			}
			out[reason] = n
		}
	}
	return out
}

// body cuts a log record's body at Config.MaxLineBytes, counting it.
func (s *script) body(text string) string {
	kept := cutUTF8(text, s.r.maxLine)
	if len(kept) < len(text) {
		s.cutLine.Add(1)
	}
	return kept
}

// unmappedCounts copies the unmapped counts.
func (s *script) unmappedCounts() map[string]uint64 {
	s.unmappedMu.Lock()
	defer s.unmappedMu.Unlock()
	return maps.Clone(s.unmapped)
}

// loop runs bpftrace until Shutdown, restarting it with exponential backoff.
func (s *script) loop() {
	defer s.r.wg.Done()
	backoff := s.r.backoffMin
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			s.restarts.Add(1)
		}
		res := s.runOnce()
		if res.stopped || s.r.stopping() {
			return // what failed was cut short by Shutdown
		}
		if res.uptime >= s.r.backoffMax {
			backoff = s.r.backoffMin // it ran a good while: start over
		}
		if res.startFailure {
			// Logged before it is counted: whoever sees the count finds
			// the reason in the log (TestIntegrationRunqlat read the
			// log between the two in a loaded guest).
			s.log.Error("bpftrace script failed to start; retrying", zap.Error(res.err), zap.Duration("retry_in", backoff))
			s.startFailures.Add(1)
		} else {
			s.log.Warn("bpftrace script ended; restarting", zap.Error(res.err), zap.Duration("ran_for", res.uptime.Round(time.Millisecond)), zap.Duration("restart_in", backoff))
		}
		t := time.NewTimer(backoff)
		select {
		case <-s.r.stop:
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, s.r.backoffMax)
	}
}

type runResult struct {
	err          error
	startFailure bool
	stopped      bool // ended by Shutdown
	uptime       time.Duration
}

// runOnce runs bpftrace once, until it exits or Shutdown stops it.
func (s *script) runOnce() runResult {
	select {
	case <-s.r.stop:
		return runResult{stopped: true}
	default:
	}
	fail := func(err error) runResult { return runResult{err: err, startFailure: true} }
	bin, err := s.r.binaryPath()
	if err != nil {
		return fail(err)
	}
	text, err := s.spec.text()
	if err != nil {
		return fail(fmt.Errorf("reading the script: %w", err))
	}
	if err := checkMapsUsed(text, s.spec.order); err != nil {
		return fail(err)
	}
	tmp, err := writeTemp(s.spec.name, s.spec.compose(text))
	if err != nil {
		return fail(fmt.Errorf("writing the program for bpftrace: %w", err))
	}
	defer os.Remove(tmp)

	args := []string{"-f", "json"}
	display := s.spec.name
	if s.spec.path != "" {
		display = s.spec.path
		// Quoted #includes resolve against the script's directory.
		args = append(args, "-I", filepath.Dir(s.spec.path))
	}
	if len(s.spec.args) > 0 {
		// Positional parameters follow the program; "--" ends the options
		// so that an argument like "-1" is not read as one.
		args = append(args, "--", tmp)
		args = append(args, s.spec.args...)
	} else {
		args = append(args, tmp)
	}
	// bpftrace gets SIGKILL when the thread that started it ends (Pdeathsig
	// is per thread): keep this goroutine on its thread until bpftrace has
	// been reaped, so that no other goroutine can end the thread meanwhile.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p, err := startProc(bin, args, s.r.env)
	if err != nil {
		return fail(fmt.Errorf("starting %s: %w", bin, err))
	}
	started := time.Now()
	h := &runHandler{
		s:       s,
		start:   pcommon.NewTimestampFromTime(started),
		tmpPath: tmp,
		display: display,
		fns:     mapFunctions(text),
		asm:     lineAssembler{max: s.r.maxLine},
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		h.readStdout(p.stdout)
	}()
	go func() {
		defer readers.Done()
		h.readStderr(p.stderr)
	}()
	idleDone := make(chan struct{})
	idleStopped := make(chan struct{})
	go func() {
		defer close(idleStopped)
		h.flushIdleLines(idleDone)
	}()

	stopped := false
	select {
	case <-p.exited:
	case <-s.r.stop:
		stopped = true
		p.signal(syscall.SIGINT)
		grace := time.NewTimer(s.r.grace)
		select {
		case <-p.exited:
		case <-grace.C:
			s.log.Warn("bpftrace did not exit after SIGINT; killing it", zap.Duration("grace", s.r.grace))
			p.signal(syscall.SIGKILL)
		case <-s.r.kill:
			p.signal(syscall.SIGKILL)
		}
		grace.Stop()
		<-p.exited
	}
	uptime := time.Since(started)

	drained := make(chan struct{})
	go func() {
		readers.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(drainTimeout):
		p.stdout.Close() // unblocks the readers
		p.stderr.Close()
		<-drained
	}
	p.stdout.Close()
	p.stderr.Close()
	close(idleDone)
	<-idleStopped
	h.flushLine()

	exit := describeExit(p.state(), p.err)
	if stopped {
		s.log.Info("bpftrace script stopped", zap.String("exit", exit))
		return runResult{stopped: true, uptime: uptime}
	}
	failed := p.state() == nil || !p.state().Success()
	attached := h.attached.Load()
	switch {
	case failed && !attached:
		return runResult{startFailure: true, uptime: uptime,
			err: fmt.Errorf("bpftrace %s before attaching its probes: %s", exit, h.stderrSummary())}
	case failed && uptime < s.r.startupWindow:
		return runResult{startFailure: true, uptime: uptime,
			err: fmt.Errorf("bpftrace %s %s after start (attaching %d probes): %s", exit, uptime.Round(time.Millisecond), h.probes.Load(), h.stderrSummary())}
	case failed:
		return runResult{uptime: uptime, err: fmt.Errorf("bpftrace %s: %s", exit, h.stderrSummary())}
	default:
		return runResult{uptime: uptime, err: fmt.Errorf("bpftrace %s (the script ended by itself)", exit)}
	}
}

func describeExit(st *os.ProcessState, waitErr error) string {
	if st == nil {
		if waitErr != nil {
			return "failed: " + waitErr.Error()
		}
		return "ended"
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "was killed by signal " + ws.Signal().String()
	}
	return fmt.Sprintf("exited with status %d", st.ExitCode())
}

// writeTemp writes the program bpftrace runs to a new temporary file.
func writeTemp(name, program string) (string, error) {
	safe := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		default:
			return '_'
		}
	}, name)
	if len(safe) > 64 {
		safe = safe[:64]
	}
	f, err := os.CreateTemp("", "otelcol-bpftrace-"+safe+"-*.bt")
	if err != nil {
		return "", err
	}
	_, werr := f.WriteString(program)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// runHandler turns one bpftrace run's output into log records and metrics.
type runHandler struct {
	s       *script
	start   pcommon.Timestamp // the maps' start: bpftrace's start
	tmpPath string            // the composed program, named in bpftrace's messages...
	display string            // ...as the script's path (or name)
	fns     map[string]string // the function the script assigns to each map (mapFunctions)
	// auto: the specs of printed maps no MapConfig names, by record type
	// and map name (used by the stdout reader only).
	auto map[string]*mapSpec

	attached atomic.Bool
	probes   atomic.Uint64

	lineMu sync.Mutex // the assembler, and the order of printed lines
	asm    lineAssembler

	tailMu sync.Mutex
	tail   []string // the last stderr lines, noise left out
}

// readStdout reads bpftrace's records, each charged to the budget while
// it is handled; a record beyond the record limit, or beyond the room left
// in the budget, is cut (and counted).
func (h *runHandler) readStdout(f io.Reader) {
	const chunk = 64 << 10
	br := bufio.NewReaderSize(f, chunk)
	b := h.s.r.batch
	for {
		// While the budget is spent, stop reading: bpftrace's output
		// waits in the pipe, and bpftrace counts the events it loses.
		b.waitRoom(min(chunk, b.maxBytes/4))
		var charged int64
		line, cut, err := readLineCharged(br, h.s.r.maxRec, func(n int) bool {
			if !b.tryCharge(int64(n)) {
				return false
			}
			charged += int64(n)
			return true
		})
		switch cut {
		case CutRecordTooLong:
			h.s.cutRecord.Add(1)
		case CutBudget:
			h.s.cutBudget.Add(1)
		}
		if len(line) > 0 {
			h.handleRecord(line, time.Now())
		}
		b.adjust(-charged)
		if err != nil {
			return
		}
	}
}

func (h *runHandler) handleRecord(line []byte, now time.Time) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return // bpftrace prints blank lines before its exit-time maps
	}
	s := h.s
	rec, err := parseRecord(line)
	if err != nil {
		s.parseErrors.Add(1)
		s.warnOnce("parse", "bpftrace printed a line that is not a record this receiver knows; it is passed on as a WARN log record (counted in ParseErrors, logged once)",
			zap.Error(err), zap.ByteString("line", truncate(line, 512)))
		body := s.body(s.redact(string(line))) // redacted whole, then cut: no secret split at the cut
		s.r.batch.addLogs(func(lrs plog.LogRecordSlice) int {
			appendLineLog(lrs, s.spec.name, streamStdout, body, plog.SeverityNumberWarn, now, now)
			return 1
		})
		return
	}
	switch rec.kind {
	case kindText:
		h.lineMu.Lock()
		before := h.asm.len()
		pl, ok, cut := h.asm.add(rec.text, rec.endsLine, now)
		s.r.batch.adjust(int64(h.asm.len() - before))
		if cut > 0 {
			s.cutLine.Add(1)
		}
		if ok {
			h.emitLine(pl, now)
		}
		h.lineMu.Unlock()
	case kindMap:
		ts := pcommon.NewTimestampFromTime(now)
		mapped := true
		for _, md := range rec.maps {
			spec := s.spec.maps[md.name]
			if spec == nil {
				spec = h.autoSpec(rec.typ, md)
			}
			if spec == nil {
				mapped = false
				continue
			}
			var err error
			s.r.batch.addMetrics(func(ms pmetric.MetricSlice) int {
				var n int
				n, err = appendMapMetrics(ms, s.spec.name, spec, md, h.start, ts)
				return n
			})
			if err != nil {
				mapped = false
				s.warnOnce("map "+md.name+": "+err.Error(), "bpftrace map not fully exported; the printed map is passed on as a log record (counted in unmapped, logged once)", zap.String("map", md.name), zap.Error(err))
			}
		}
		if !mapped {
			h.passOn(rec.typ, line, now)
		}
	case kindLostEvents:
		s.lostEvents.Add(rec.count)
		s.r.batch.addLogs(func(lrs plog.LogRecordSlice) int {
			appendLostEventsLog(lrs, s.spec.name, rec.count, now)
			return 1
		})
	case kindAttachedProbes:
		h.probes.Store(rec.count)
		h.attached.Store(true)
		s.log.Info("bpftrace script running", zap.Uint64("probes", rec.count))
	case kindError:
		msg := strings.ReplaceAll(rec.text, h.tmpPath, h.display)
		sev := plog.SeverityNumberWarn
		if rec.isError {
			sev = plog.SeverityNumberError
		}
		s.r.batch.addLogs(func(lrs plog.LogRecordSlice) int {
			appendEventLog(lrs, s.spec.name, "bpftrace."+rec.typ, msg, sev, now)
			return 1
		})
	default:
		s.warnOnce("type "+rec.typ, "bpftrace printed a record type this receiver does not map; it is passed on as a log record (counted in unmapped, logged once)", zap.String("type", rec.typ))
		h.passOn(rec.typ, line, now)
	}
}

// autoSpec is the spec of a printed map no MapConfig names (autoMapSpec),
// or nil when its metric name is a listed map's: that map keeps the name.
func (h *runHandler) autoSpec(recType string, md mapData) *mapSpec {
	key := recType + " " + md.name
	if spec, ok := h.auto[key]; ok {
		return spec
	}
	spec := autoMapSpec(h.s.spec.name, recType, h.fns[md.name], md)
	for _, listed := range h.s.spec.maps {
		if listed.metricName == spec.metricName {
			h.s.warnOnce("auto "+md.name, "bpftrace map printed by the script is not exported: its default metric name is a listed map's; list it under maps with a name of its own", zap.String("map", md.name), zap.String("metric", spec.metricName))
			spec = nil
			break
		}
	}
	if h.auto == nil {
		h.auto = map[string]*mapSpec{}
	}
	h.auto[key] = spec
	return spec
}

// passOn counts a record that could not be mapped (by its type) and passes
// its JSON line on as an INFO log record named bpftrace.<type>, so that no
// output is lost.
func (h *runHandler) passOn(typ string, line []byte, now time.Time) {
	h.s.countUnmapped(typ)
	body := h.s.body(h.s.redact(strings.ReplaceAll(string(line), h.tmpPath, h.display)))
	name := h.s.spec.name
	h.s.r.batch.addLogs(func(lrs plog.LogRecordSlice) int {
		appendEventLog(lrs, name, "bpftrace."+typ, body, plog.SeverityNumberInfo, now)
		return 1
	})
}

// emitLine hands a printed line to the batcher (lineMu held: lines keep
// their order).
func (h *runHandler) emitLine(pl printedLine, now time.Time) {
	pl.text = h.s.redact(pl.text)
	name := h.s.spec.name
	h.s.r.batch.addLogs(func(lrs plog.LogRecordSlice) int {
		appendLineLog(lrs, name, streamStdout, pl.text, plog.SeverityNumberInfo, pl.at, now)
		return 1
	})
}

// flushIdleLines emits a partial printed line that has waited
// partialLineIdle for the rest, until done is closed.
func (h *runHandler) flushIdleLines(done <-chan struct{}) {
	t := time.NewTicker(partialLineIdle / 4)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			h.lineMu.Lock()
			if since, ok := h.asm.pending(); ok && now.Sub(since) >= partialLineIdle {
				h.flushLineLocked(now)
			}
			h.lineMu.Unlock()
		}
	}
}

// flushLine emits the partial line left when bpftrace ends.
func (h *runHandler) flushLine() {
	h.lineMu.Lock()
	defer h.lineMu.Unlock()
	h.flushLineLocked(time.Now())
}

// flushLineLocked emits the partial line, crediting its bytes (lineMu held).
func (h *runHandler) flushLineLocked(now time.Time) {
	n := h.asm.len()
	pl, ok := h.asm.flush()
	h.s.r.batch.adjust(-int64(n))
	if ok {
		h.emitLine(pl, now)
	}
}

func (h *runHandler) readStderr(f io.Reader) {
	br := bufio.NewReaderSize(f, 4<<10)
	name := h.s.spec.name
	for {
		// A line is read up to its bound (and its line end), then cut
		// where naming the script instead of the temporary file made it
		// longer; counted once.
		raw, cut, err := readLineCharged(br, min(maxStderrBytes, h.s.r.maxLine+2), nil)
		line := strings.TrimRight(string(raw), "\r\n")
		if strings.TrimSpace(line) != "" {
			line = strings.ReplaceAll(line, h.tmpPath, h.display)
			if kept := cutUTF8(line, h.s.r.maxLine); cut != "" || len(kept) < len(line) {
				h.s.cutLine.Add(1)
				line = kept
			}
			now := time.Now()
			h.s.r.batch.addLogs(func(lrs plog.LogRecordSlice) int {
				appendLineLog(lrs, name, streamStderr, line, plog.SeverityNumberWarn, now, now)
				return 1
			})
			if !strings.Contains(line, memlockNoise) {
				h.tailMu.Lock()
				h.tail = append(h.tail, line)
				if len(h.tail) > stderrTailLines {
					h.tail = h.tail[len(h.tail)-stderrTailLines:]
				}
				h.tailMu.Unlock()
			}
		}
		if err != nil {
			return
		}
	}
}

// stderrSummary is bpftrace's error output, for an error message.
func (h *runHandler) stderrSummary() string {
	h.tailMu.Lock()
	defer h.tailMu.Unlock()
	if len(h.tail) == 0 {
		return "bpftrace printed no error message"
	}
	return strings.Join(h.tail, "\n")
}

// readLine reads one line (newline included) of at most max bytes; the rest
// of a longer line is dropped.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	line, _, err := readLineCharged(br, max, nil)
	return line, err
}

// readLineCharged is readLine that asks charge (when not nil) for every
// fragment's bytes before it keeps them: once charge refuses, the rest of
// the line is dropped. cut says why a line was cut: CutRecordTooLong (over
// limit), CutBudget (charge refused), or "".
func readLineCharged(br *bufio.Reader, limit int, charge func(n int) bool) (line []byte, cut string, err error) {
	var buf []byte
	for {
		frag, err := br.ReadSlice('\n')
		if cut == "" {
			keep := frag
			if room := limit - len(buf); len(keep) > room {
				keep, cut = keep[:max(room, 0)], CutRecordTooLong
			}
			if len(keep) > 0 && charge != nil && !charge(len(keep)) {
				keep, cut = nil, CutBudget
			}
			buf = append(buf, keep...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, cut, err
		}
	}
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

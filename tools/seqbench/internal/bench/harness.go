//go:build linux

package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/otelcol-seq/otelcol-seq/internal/bpfload"
	"github.com/otelcol-seq/otelcol-seq/internal/ring"
	"github.com/otelcol-seq/otelcol-seq/internal/ring/transport"
	"github.com/otelcol-seq/otelcol-seq/internal/sequencer"
)

// Config is one benchmark run: every transport × workload × CPU count.
type Config struct {
	Transports []Transport
	Workloads  []Workload
	CPUs       []int
	Duration   time.Duration
	Out        string // directory for results.json, results.md, bench.png; "" for none

	// BufferBytes is the memory every transport gets: the sequencer's ring
	// (BufferBytes/128 slots), the ring buffer, or the perf buffers together.
	// A power of two.
	BufferBytes int
	ForkPerCPU  int           // stress-ng --fork instances per CPU
	ExecPerCPU  int           // exec loops per CPU
	SynthPerCPU int           // getpid threads per CPU
	Poll        time.Duration // the longest the parked reader waits for a wake-up
	Untraced    bool          // measure each workload untraced too (the slowdown column)

	Log io.Writer // progress; nil for none
}

// DefaultConfig is what `make bench` runs: the sequencer, the receiver's
// ring buffer and perf transports and the native arms, every workload, CPU
// counts up to 2, 5 s each — about four minutes in all.
func DefaultConfig() Config {
	cpus := []int{1, 2}
	if runtime.NumCPU() < 2 {
		cpus = []int{1}
	}
	return Config{
		Transports:  []Transport{Sequencer, RingBuf, RingBufNative, PerfBuf, PerfBufNative},
		Workloads:   Workloads,
		CPUs:        cpus,
		Duration:    5 * time.Second,
		Out:         "bench-results",
		BufferBytes: 64 << 20,
		ForkPerCPU:  4,
		ExecPerCPU:  2,
		SynthPerCPU: 1,
		Poll:        time.Second, // the receiver's park timeout
		Untraced:    true,
	}
}

// Result is one transport × workload × CPU count.
type Result struct {
	Transport string  `json:"transport"`
	Workload  string  `json:"workload"`
	CPUs      int     `json:"cpus"`
	Seconds   float64 `json:"seconds"` // producers attached for

	Issued      uint64  `json:"issued"`      // tickets issued: the kernel's counter (native arms: records the programs tried to emit)
	Delivered   uint64  `json:"delivered"`   // tickets (native arms: records) that reached the reader
	Lost        uint64  `json:"lost"`        // tickets in the gaps the reader reported (native arms: failed reservations or outputs); LostBy says why
	Unaccounted int64   `json:"unaccounted"` // issued - delivered - lost: must be 0
	CapturePct  float64 `json:"capture_pct"`
	Records     uint64  `json:"records"`
	DecodeErrs  uint64  `json:"decode_errors"`

	TicketOrderRaw     uint64 `json:"ticket_order_violations"`           // in delivery order
	TicketOrderAfter   uint64 `json:"ticket_order_violations_reordered"` // after the reorder stage
	CausalityRaw       uint64 `json:"causality_violations"`
	CausalityAfter     uint64 `json:"causality_violations_reordered"`
	TimeInversionRaw   uint64 `json:"timestamp_inversions"`
	TimeInversionAfter uint64 `json:"timestamp_inversions_reordered"`
	Processes          int    `json:"processes_tracked"`

	ReorderDeclared uint64 `json:"reorder_declared_lost"` // tickets the stage gave up on that no producer counted failed
	ReorderLate     uint64 `json:"reorder_late"`          // records that arrived after their tickets were given up on (dropped)
	ReorderMaxHeld  int    `json:"reorder_max_held"`

	KernelEvents    uint64            `json:"kernel_events"`            // records the producers made (by the kernel's per-CPU counters)
	KernelFailed    uint64            `json:"kernel_failed"`            // ring buffer/perf outputs that failed
	FailedFull      uint64            `json:"failed_full"`              // ... for want of room
	FailedBusy      uint64            `json:"failed_busy"`              // ... ring buffer lock not taken / perf nesting
	FailedOther     uint64            `json:"failed_other"`             // ... anything else
	PerfLost        uint64            `json:"perf_lost_samples"`        // LostSamples the perf reader was told of (perfbuf-native: the -ENOSPC failures again, some never told)
	Overrun         uint64            `json:"sequencer_overrun"`        // sequencer slots skipped by producers
	LostBy          map[string]uint64 `json:"lost_by_reason,omitempty"` // the reader's gaps by reason
	Wakeups         uint64            `json:"wakeups"`                  // ring buffer forced wake-ups; sequencer doorbells
	ReaderWakeups   uint64            `json:"reader_wakeups"`           // waits of the reader that ended with a wake-up
	BPFRuns         uint64            `json:"bpf_run_count"`
	BPFRunTimeNs    uint64            `json:"bpf_run_time_ns"`
	BPFNsPerRun     float64           `json:"bpf_ns_per_run"`
	BPFNsPerEvent   float64           `json:"bpf_ns_per_event"` // all the programs' run time / tickets issued
	BPFRecursion    uint64            `json:"bpf_recursion_misses"`
	ConsumerCPU     float64           `json:"consumer_cpu_s"`
	ConsumerCPUPerM float64           `json:"consumer_cpu_s_per_million"`
	EventsPerSec    float64           `json:"events_per_s"` // delivered / seconds

	WorkloadOps     uint64  `json:"workload_ops"`
	WorkloadOpsPerS float64 `json:"workload_ops_per_s"`
	UntracedOpsPerS float64 `json:"untraced_ops_per_s"`
	SlowdownPct     float64 `json:"slowdown_pct"` // 1 - traced/untraced ops/s, in %
	Error           string  `json:"error,omitempty"`
}

func (c *Config) logf(format string, a ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format, a...)
	}
}

func (c *Config) workloadOptions(cpus int) WorkloadOptions {
	return WorkloadOptions{CPUs: cpus, Duration: c.Duration, ForkPerCPU: c.ForkPerCPU, ExecPerCPU: c.ExecPerCPU, SynthPerCPU: c.SynthPerCPU}
}

// Run runs every combination and writes the results to c.Out.
func Run(c Config) ([]Result, error) {
	restore, err := EnableBPFStats()
	if err != nil {
		return nil, fmt.Errorf("turn on the BPF run-time statistics (BPF_ENABLE_STATS): %w", err)
	}
	// The statistics stay on while the descriptor is open; the kernel
	// closes it when the process ends, Ctrl-C included.
	defer restore()
	var results []Result
	for _, w := range c.Workloads {
		for _, n := range c.CPUs {
			var untraced float64
			if c.Untraced {
				ops, el, err := Untraced(c, w, n)
				if err != nil {
					return results, fmt.Errorf("untraced %s on %d CPUs: %w", w, n, err)
				}
				untraced = float64(ops) / el.Seconds()
				c.logf("%-16s %-5s %d CPU  untraced: %.0f ops/s\n", "-", w, n, untraced)
			}
			for _, t := range c.Transports {
				r, err := RunOne(c, t, w, n)
				if err != nil {
					r = Result{Transport: string(t), Workload: string(w), CPUs: n, Error: err.Error()}
					c.logf("%-16s %-5s %d CPU  error: %v\n", t, w, n, err)
				} else {
					c.logf("%-16s %-5s %d CPU  %s\n", t, w, n, r.summary())
				}
				if untraced > 0 && r.WorkloadOpsPerS > 0 {
					r.UntracedOpsPerS = untraced
					r.SlowdownPct = 100 * (1 - r.WorkloadOpsPerS/untraced)
				}
				results = append(results, r)
			}
		}
	}
	if c.Out != "" {
		if err := Write(c.Out, results, c); err != nil {
			return results, err
		}
	}
	return results, nil
}

func (r Result) summary() string {
	return fmt.Sprintf("issued %d delivered %d lost %d %v unaccounted %d capture %.3f%% order %d/%d causality %d/%d %.0f ev/s bpf %.0f ns/ev consumer %.2f s/M",
		r.Issued, r.Delivered, r.Lost, r.LostBy, r.Unaccounted, r.CapturePct, r.TicketOrderRaw, r.TicketOrderAfter,
		r.CausalityRaw, r.CausalityAfter, r.EventsPerSec, r.BPFNsPerEvent, r.ConsumerCPUPerM)
}

// Untraced runs workload w on n CPUs with nothing attached.
func Untraced(c Config, w Workload, n int) (uint64, time.Duration, error) {
	run, err := prepare(w, c.workloadOptions(n))
	if err != nil {
		return 0, 0, err
	}
	if err := run.start(); err != nil {
		run.kill()
		return 0, 0, err
	}
	return run.wait()
}

// arm is one transport's producers, loaded and attached, and its reader.
type arm interface {
	// start runs the reader; stopAndWait (after detach) stops it once it
	// has read what the producers published, and waits.
	start() (stopAndWait func() (*Consumed, error))
	detach() error
	// account sets what the transport itself counts (issued, lost and
	// why, its counters) once the reader has stopped.
	account(res *Result, cons *Consumed) error
	runStats() (bpfload.RunStats, error)
	close()
}

// openArm loads and attaches transport t's producers for workload w (the
// synthetic one on process tgid) and gets its reader ready.
func openArm(c Config, t Transport, w Workload, tgid uint32) (arm, error) {
	if nt, ok := t.native(); ok {
		return openNative(c, nt, w, tgid)
	}
	return openSeq(c, t, w, tgid)
}

// RunOne loads and attaches transport t's programs only, runs workload w on
// the first n CPUs, detaches, drains the reader and accounts for every
// record the producers issued.
func RunOne(c Config, t Transport, w Workload, n int) (res Result, err error) {
	res = Result{Transport: string(t), Workload: string(w), CPUs: n}
	if c.BufferBytes < 1<<16 || c.BufferBytes&(c.BufferBytes-1) != 0 {
		return res, fmt.Errorf("buffer of %d bytes: want a power of two, at least 64 KiB", c.BufferBytes)
	}
	run, err := prepare(w, c.workloadOptions(n))
	if err != nil {
		return res, err
	}
	defer func() {
		if err != nil {
			run.kill()
		}
	}()
	a, err := openArm(c, t, w, uint32(run.pid))
	if err != nil {
		return res, err
	}
	defer a.close()
	t0 := time.Now()
	stopReader := a.start()
	readerStopped := false
	defer func() {
		if !readerStopped {
			_ = a.detach()
			_, _ = stopReader()
		}
	}()

	if err := run.start(); err != nil {
		return res, err
	}
	ops, elapsed, werr := run.wait()
	if err := a.detach(); err != nil {
		return res, err
	}
	attached := time.Since(t0)
	if werr != nil {
		return res, werr
	}
	// Programs still running when their link went are done within microseconds.
	time.Sleep(20 * time.Millisecond)
	cons, rerr := stopReader()
	readerStopped = true
	if rerr != nil {
		return res, fmt.Errorf("reader: %w", rerr)
	}
	if err := a.account(&res, cons); err != nil {
		return res, err
	}
	rs, err := a.runStats()
	if err != nil {
		return res, err
	}

	res.Seconds = attached.Seconds()
	res.Records = cons.Records
	res.DecodeErrs = cons.DecodeErrs
	res.ReaderWakeups = cons.Wakeups
	res.Unaccounted = int64(res.Issued) - int64(res.Delivered) - int64(res.Lost)
	if res.Issued > 0 {
		res.CapturePct = 100 * float64(res.Delivered) / float64(res.Issued)
	}
	res.TicketOrderRaw, res.TicketOrderAfter = cons.Raw.TicketOrder, cons.Ordered.TicketOrder
	res.CausalityRaw, res.CausalityAfter = cons.Raw.Causality, cons.Ordered.Causality
	res.TimeInversionRaw, res.TimeInversionAfter = cons.Raw.TimeInversions, cons.Ordered.TimeInversions
	res.Processes = cons.Raw.Processes()
	res.BPFRuns, res.BPFRunTimeNs, res.BPFRecursion = rs.RunCount, uint64(rs.RunTime), rs.Recursion
	if rs.RunCount > 0 {
		res.BPFNsPerRun = float64(rs.RunTime) / float64(rs.RunCount)
	}
	if res.Issued > 0 {
		res.BPFNsPerEvent = float64(rs.RunTime) / float64(res.Issued)
	}
	res.ConsumerCPU = cons.CPU.Seconds()
	if res.Delivered > 0 {
		res.ConsumerCPUPerM = res.ConsumerCPU / (float64(res.Delivered) / 1e6)
	}
	res.EventsPerSec = float64(res.Delivered) / res.Seconds
	res.WorkloadOps = ops
	if elapsed > 0 {
		res.WorkloadOpsPerS = float64(ops) / elapsed.Seconds()
	}
	return res, nil
}

// seqArm is one of the receiver's transports (or a bench variant of one):
// its loader (sequencer.Open) and its reader, read as the receiver reads.
type seqArm struct {
	seq *sequencer.Sequencer
	k   *consumer
}

func openSeq(c Config, t Transport, w Workload, tgid uint32) (arm, error) {
	opts, err := t.options(w, tgid, c.BufferBytes)
	if err != nil {
		return nil, err
	}
	k := newConsumer(w != Synth, t.reordered(), c.Poll)
	if t.reordered() {
		opts.OnArrival = k.arrival
	}
	seq, err := sequencer.Open(opts)
	if err != nil {
		return nil, err
	}
	if k.src, err = seq.NewSource(); err != nil {
		seq.Close()
		return nil, err
	}
	return &seqArm{seq: seq, k: k}, nil
}

func (a *seqArm) start() func() (*Consumed, error)    { return a.k.start() }
func (a *seqArm) detach() error                       { return a.seq.Detach() }
func (a *seqArm) runStats() (bpfload.RunStats, error) { return a.seq.RunStats() }
func (a *seqArm) close()                              { a.seq.Close() }

// account: every ticket below the head was delivered or reported lost.
func (a *seqArm) account(res *Result, cons *Consumed) error {
	issued := a.k.src.Head()
	kc, err := a.seq.Counters()
	if err != nil {
		return err
	}
	res.Issued = issued
	res.Delivered = cons.Tickets
	res.Lost = cons.Lost
	res.LostBy = cons.LostBy
	res.Overrun = kc.Overrun
	for _, v := range kc.Events {
		res.KernelEvents += v
	}
	if tix := kc.TotalTickets(); tix != issued {
		// The per-CPU counters and the head must agree.
		res.Error = fmt.Sprintf("kernel per-CPU tickets %d != head %d", tix, issued)
	}
	res.KernelFailed = kc.TotalFailed()
	res.FailedFull, res.FailedBusy, res.FailedOther = kc.FailedFull, kc.FailedBusy, kc.FailedOther
	if bs, ok := a.k.src.(*transport.Buf); ok {
		st := bs.BufStats()
		res.PerfLost = st.PerfLost
		res.ReorderDeclared = cons.LostBy[ring.GaveUp.String()]
		res.ReorderLate = st.ReorderLate
		res.ReorderMaxHeld = st.ReorderMaxHeld
	}
	res.Wakeups = kc.Wakeups + kc.Doorbells
	return nil
}

// Write writes results.json, results.md and bench.png into dir.
func Write(dir string, results []Result, c Config) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	var errs []error
	errs = append(errs, os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644))
	errs = append(errs, os.WriteFile(filepath.Join(dir, "results.md"), []byte(Markdown(results, c)), 0o644))
	f, err := os.Create(filepath.Join(dir, "bench.png"))
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	errs = append(errs, Plot(f, results), f.Close())
	return errors.Join(errs...)
}

// EnableBPFStats turns the kernel's BPF run-time statistics on
// (BPF_ENABLE_STATS: they stay on while this process holds the file
// descriptor, counted with every other holder's and with
// kernel.bpf_stats_enabled, so another tool setting the sysctl meanwhile
// neither stops them nor is undone) and returns a function that lets go.
func EnableBPFStats() (restore func(), err error) {
	c, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		return func() {}, err
	}
	return func() { _ = c.Close() }, nil
}

// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package bpftrace

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
)

// Output receives what the scripts produce. Calls come from one goroutine,
// batched (at most every 100ms, or per 1000 records or data points).
type Output interface {
	// ConsumeLogs receives printed lines, bpftrace's stderr lines, its
	// error records and lost-events reports.
	ConsumeLogs(plog.Logs)
	// ConsumeMetrics receives the exported maps.
	ConsumeMetrics(pmetric.Metrics)
}

// Counters are one script's counts since New.
type Counters struct {
	// Restarts: how many times bpftrace was started again after it ended
	// (it died, exited, or failed to start).
	Restarts uint64
	// StartFailures: starts that failed: no usable bpftrace binary, an
	// unreadable script, or bpftrace exiting with an error before or soon
	// after attaching its probes (a script that does not compile).
	StartFailures uint64
	// LostEvents: events bpftrace reported lost (its perf buffer was full).
	LostEvents uint64
	// ParseErrors: stdout lines that were not bpftrace JSON records, or
	// whose data had no shape this package knows.
	ParseErrors uint64
	// Cut: lines and records cut, by reason: CutLineTooLong (a log
	// record's body beyond Config.MaxLineBytes), CutRecordTooLong (a
	// stdout record beyond the record limit), CutBudget (a stdout record
	// read while the budget was spent). A cut record is no JSON any more:
	// it is passed on as a WARN log record and counted in ParseErrors too.
	Cut map[string]uint64
	// Unmapped: records that could not be mapped to logs or metrics, by
	// record type (a type this package does not know, such as test_result
	// or benchmark_result; a map with values that are not numbers). Each is
	// passed on as an INFO log record holding its JSON line.
	Unmapped map[string]uint64
	// Redacted: secret values replaced by REDACTED in the lines the script
	// printed (ScriptConfig.Redact).
	Redacted uint64
}

// Defaults of the supervisor's timing.
const (
	defaultBackoffMin = time.Second
	defaultBackoffMax = time.Minute
	// defaultGrace: after SIGINT, how long bpftrace gets to run its END
	// blocks and print its maps before it is killed (Shutdown's context
	// can cut it shorter).
	defaultGrace = 5 * time.Second
	// defaultStartupWindow: an error exit this soon after the start counts
	// as a start failure even when the probes were announced (bpftrace
	// prints attached_probes before attaching them).
	defaultStartupWindow = 5 * time.Second
)

// Reasons of Counters.Cut.
const (
	CutLineTooLong   = "line_too_long"
	CutRecordTooLong = "record_too_long"
	CutBudget        = "budget"
)

// Runner runs the configured bpftrace scripts, each as its own supervised
// bpftrace process, and feeds their output to an Output.
type Runner struct {
	logger  *zap.Logger
	out     Output
	binary  string
	scripts []*script
	batch   *batcher
	maxLine int // Config.MaxLineBytes with its default
	maxRec  int // the most bytes of one stdout record

	// Timing; tests shorten them.
	backoffMin, backoffMax time.Duration
	grace                  time.Duration
	startupWindow          time.Duration

	mu           sync.Mutex
	started      bool
	stopped      bool
	batchRunning bool
	stop         chan struct{} // closed by Shutdown: interrupt the scripts
	kill         chan struct{} // closed when Shutdown's context ends: kill them
	ctx          context.Context
	cancel       context.CancelFunc
	wg           sync.WaitGroup

	binMu   sync.Mutex
	binPath string   // resolved and version-checked
	env     []string // the collector's environment plus Config.Env
}

// New checks cfg and returns a Runner for it; nothing runs before Start.
func New(cfg Config, logger *zap.Logger, out Output) (*Runner, error) {
	if out == nil {
		return nil, errors.New("bpftrace: nil Output")
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	specs, err := cfg.resolve(false)
	if err != nil {
		return nil, err
	}
	maxBuf, maxLine := cfg.budget()
	r := &Runner{
		logger:        logger,
		out:           out,
		binary:        cfg.Binary,
		batch:         newBatcher(out, flushInterval, maxBuf),
		maxLine:       maxLine,
		maxRec:        int(min(maxRecordBytes, maxBuf)),
		backoffMin:    defaultBackoffMin,
		backoffMax:    defaultBackoffMax,
		grace:         defaultGrace,
		startupWindow: defaultStartupWindow,
		stop:          make(chan struct{}),
		kill:          make(chan struct{}),
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.env = os.Environ()
	for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
		r.env = append(r.env, k+"="+cfg.Env[k])
	}
	for _, spec := range specs {
		r.scripts = append(r.scripts, &script{
			r:      r,
			spec:   spec,
			log:    logger.With(zap.String("script", spec.name)),
			warned: map[string]bool{},
		})
	}
	return r, nil
}

// Start starts every script in the background and returns. It fails only
// when called twice: a script that cannot start is logged, counted and
// retried with backoff while the others run.
func (r *Runner) Start(_ context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return errors.New("bpftrace: runner already started")
	}
	r.started = true
	if r.stopped || len(r.scripts) == 0 {
		return nil
	}
	r.batch.start()
	r.batchRunning = true
	for _, s := range r.scripts {
		r.wg.Add(1)
		go s.loop()
	}
	return nil
}

// Shutdown interrupts every bpftrace (SIGINT: it runs its END blocks and
// prints its maps, which are delivered), kills any still running after the
// grace period or when ctx ends, reaps them, and flushes what is left to the
// Output. Nothing it started is left running.
func (r *Runner) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return nil
	}
	r.stopped = true
	close(r.stop)
	r.cancel()
	batchRunning := r.batchRunning
	r.mu.Unlock()

	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		close(r.kill)
		// Killed processes end at once; wait to reap them.
		<-done
		err = fmt.Errorf("bpftrace: scripts killed before their END output: %w", ctx.Err())
	}
	if batchRunning {
		r.batch.shutdown()
	}
	return err
}

func (r *Runner) stopping() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

// Counters returns each script's counters, by script name.
func (r *Runner) Counters() map[string]Counters {
	out := make(map[string]Counters, len(r.scripts))
	for _, s := range r.scripts {
		out[s.spec.name] = Counters{
			Restarts:      s.restarts.Load(),
			StartFailures: s.startFailures.Load(),
			LostEvents:    s.lostEvents.Load(),
			ParseErrors:   s.parseErrors.Load(),
			Cut:           s.cutCounts(),
			Unmapped:      s.unmappedCounts(),
			Redacted:      s.redacted.Load(),
		}
	}
	return out
}

// BufferedBytes returns the bytes charged to the budget now
// (Config.MaxBufferedBytes), and the most charged at once.
func (r *Runner) BufferedBytes() (now, peak int64) { return r.batch.bytes() }

// binaryPath resolves and version-checks the bpftrace binary, once it
// succeeds.
func (r *Runner) binaryPath() (string, error) {
	r.binMu.Lock()
	defer r.binMu.Unlock()
	if r.binPath != "" {
		return r.binPath, nil
	}
	path, v, err := resolveBinary(r.ctx, r.binary)
	if err != nil {
		return "", err
	}
	r.logger.Info("Using bpftrace", zap.String("path", path), zap.String("version", v.String()))
	r.binPath = path
	return path, nil
}

//go:build linux

package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Workload names what the producers are made to do.
type Workload string

// The workloads.
const (
	Fork  Workload = "fork"  // stress-ng --fork (forkers per CPU) on the first N CPUs
	Exec  Workload = "exec"  // goroutines that fork+exec /bin/true and wait, on the first N CPUs
	Synth Workload = "synth" // one thread per CPU calling getpid in a tight loop, each pinned
)

// Workloads lists them.
var Workloads = []Workload{Fork, Exec, Synth}

// WorkloadOptions size a workload.
type WorkloadOptions struct {
	CPUs        int
	Duration    time.Duration
	ForkPerCPU  int // stress-ng --fork instances per CPU
	ExecPerCPU  int // exec loops per CPU
	SynthPerCPU int // getpid threads per CPU
}

// running is a workload started and waiting for its go.
type running struct {
	w      Workload
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	out    bytes.Buffer // stress-ng's output
	opts   WorkloadOptions
	pid    int
}

// cpuList is "0-(n-1)".
func cpuList(n int) string {
	if n <= 1 {
		return "0"
	}
	return fmt.Sprintf("0-%d", n-1)
}

// prepare gets workload w ready: for exec and synth a worker process (this
// binary, re-run) that waits for its go, so that its pid is known before the
// programs are loaded.
func prepare(w Workload, opts WorkloadOptions) (*running, error) {
	if opts.CPUs < 1 || opts.CPUs > runtime.NumCPU() {
		return nil, fmt.Errorf("%d CPUs: this machine has %d", opts.CPUs, runtime.NumCPU())
	}
	r := &running{w: w, opts: opts}
	switch w {
	case Fork:
		if _, err := exec.LookPath("stress-ng"); err != nil {
			return nil, errors.New("the fork workload needs stress-ng (apt-get install stress-ng)")
		}
		return r, nil
	case Exec, Synth:
	default:
		return nil, fmt.Errorf("unknown workload %q", w)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	n := opts.ExecPerCPU * opts.CPUs
	if w == Synth {
		n = opts.SynthPerCPU * opts.CPUs
	}
	r.cmd = exec.Command(self)
	r.cmd.Env = append(os.Environ(),
		workerEnv+"="+string(w),
		"SEQBENCH_THREADS="+strconv.Itoa(n),
		"SEQBENCH_CPUS="+strconv.Itoa(opts.CPUs),
		"SEQBENCH_DURATION="+opts.Duration.String(),
	)
	r.cmd.Stderr = os.Stderr
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	r.stdout = bufio.NewReader(out)
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s worker: %w", w, err)
	}
	r.pid = r.cmd.Process.Pid
	line, err := r.stdout.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		r.kill()
		return nil, fmt.Errorf("%s worker did not start: %q %v", w, line, err)
	}
	return r, nil
}

// start sets it going.
func (r *running) start() error {
	if r.w == Fork {
		r.cmd = exec.Command("taskset", "-c", cpuList(r.opts.CPUs), "stress-ng",
			"--fork", strconv.Itoa(r.opts.ForkPerCPU*r.opts.CPUs),
			"--timeout", strconv.Itoa(max(1, int(r.opts.Duration.Round(time.Second)/time.Second)))+"s",
			"--metrics-brief")
		r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.out
		return r.cmd.Start()
	}
	_, err := io.WriteString(r.stdin, "go\n")
	return err
}

var stressFork = regexp.MustCompile(`\bfork\s+(\d+)\s+([0-9.]+)\s`)

// wait waits for the end and returns the operations done and over how long.
func (r *running) wait() (ops uint64, elapsed time.Duration, err error) {
	if r.w == Fork {
		if err := r.cmd.Wait(); err != nil {
			return 0, 0, fmt.Errorf("stress-ng: %w\n%s", err, r.out.String())
		}
		m := stressFork.FindStringSubmatch(r.out.String())
		if m == nil {
			return 0, 0, fmt.Errorf("no fork metrics in stress-ng's output:\n%s", r.out.String())
		}
		ops, _ = strconv.ParseUint(m[1], 10, 64)
		secs, _ := strconv.ParseFloat(m[2], 64)
		return ops, time.Duration(secs * float64(time.Second)), nil
	}
	line, err := r.stdout.ReadString('\n')
	werr := r.cmd.Wait()
	if err != nil {
		return 0, 0, fmt.Errorf("%s worker: %v (%v)", r.w, err, werr)
	}
	var secs float64
	if _, err := fmt.Sscanf(line, "ops %d %g", &ops, &secs); err != nil {
		return 0, 0, fmt.Errorf("%s worker said %q", r.w, line)
	}
	return ops, time.Duration(secs * float64(time.Second)), werr
}

func (r *running) kill() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	}
}

// workerEnv, when set, makes this binary a workload worker (WorkerMain).
const workerEnv = "SEQBENCH_WORKER"

// IsWorker reports whether this process was started as a workload worker.
func IsWorker() bool { return os.Getenv(workerEnv) != "" }

// WorkerMain runs the workload worker this process was started as, and exits.
// seqbench's main and the package's TestMain call it first.
func WorkerMain() {
	if err := worker(); err != nil {
		fmt.Fprintln(os.Stderr, "seqbench worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func worker() error {
	w := Workload(os.Getenv(workerEnv))
	threads, _ := strconv.Atoi(os.Getenv("SEQBENCH_THREADS"))
	cpus, _ := strconv.Atoi(os.Getenv("SEQBENCH_CPUS"))
	d, err := time.ParseDuration(os.Getenv("SEQBENCH_DURATION"))
	if err != nil || threads < 1 || cpus < 1 {
		return fmt.Errorf("bad worker settings (threads %d, cpus %d, duration %v)", threads, cpus, err)
	}
	// Every thread there is now, and so every thread and child created later, on the first cpus CPUs.
	if err := restrictProcess(cpus); err != nil {
		return err
	}
	runtime.GOMAXPROCS(max(cpus, threads) + 1)
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	var ops uint64
	t0 := time.Now()
	switch w {
	case Exec:
		ops, err = execLoop(threads, d)
	case Synth:
		ops = synthLoop(threads, cpus, d)
	default:
		err = fmt.Errorf("unknown workload %q", w)
	}
	if err != nil {
		return err
	}
	fmt.Printf("ops %d %g\n", ops, time.Since(t0).Seconds())
	return nil
}

// restrictProcess puts every thread of this process on CPUs 0..n-1.
func restrictProcess(n int) error {
	var set unix.CPUSet
	for i := range n {
		set.Set(i)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("sched_setaffinity %d: %w", tid, err)
		}
	}
	return nil
}

// execLoop runs n loops of fork+exec /bin/true and wait, for d.
func execLoop(n int, d time.Duration) (uint64, error) {
	path := "/bin/true"
	if _, err := os.Stat(path); err != nil {
		if path, err = exec.LookPath("true"); err != nil {
			return 0, err
		}
	}
	var ops atomic.Uint64
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, n)
	attr := &syscall.ProcAttr{Env: []string{}}
	for range n {
		wg.Go(func() {
			for !stop.Load() {
				pid, err := syscall.ForkExec(path, []string{"true"}, attr)
				if err != nil {
					if errors.Is(err, syscall.EAGAIN) {
						continue
					}
					errs <- err
					return
				}
				var ws syscall.WaitStatus
				if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
					errs <- err
					return
				}
				ops.Add(1)
			}
		})
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	select {
	case err := <-errs:
		return ops.Load(), err
	default:
	}
	return ops.Load(), nil
}

// synthLoop runs n threads, thread i pinned to CPU i % cpus, each calling
// getpid (a raw system call, no Go runtime in between) until d is over.
func synthLoop(n, cpus int, d time.Duration) uint64 {
	var stop atomic.Bool
	var wg sync.WaitGroup
	counts := make([]struct {
		n uint64
		_ [56]byte // own cache line
	}, n)
	for i := range n {
		wg.Go(func() {
			runtime.LockOSThread()
			var set unix.CPUSet
			set.Set(i % cpus)
			_ = unix.SchedSetaffinity(0, &set)
			var c uint64
			for !stop.Load() {
				for range 256 {
					unix.Getpid()
				}
				c += 256
			}
			counts[i].n = c
		})
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	var total uint64
	for _, c := range counts {
		total += c.n
	}
	return total
}

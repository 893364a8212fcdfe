//go:build linux

package bench

import (
	"os"
	"testing"
)

// The workloads re-run the test binary as their worker.
func TestMain(m *testing.M) {
	if IsWorker() {
		WorkerMain()
	}
	os.Exit(m.Run())
}

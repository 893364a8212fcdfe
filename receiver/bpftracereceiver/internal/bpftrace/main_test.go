package bpftrace

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	prepareHost()
	goleak.VerifyTestMain(m)
}

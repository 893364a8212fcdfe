// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package testutil

import (
	"testing"
	"time"
)

func TestScaled(t *testing.T) {
	t.Setenv(TimeScaleEnv, "")
	if got := Scaled(time.Second); got != time.Second {
		t.Errorf("unset: %v", got)
	}
	t.Setenv(TimeScaleEnv, "2.5")
	if got := Scaled(2 * time.Second); got != 5*time.Second {
		t.Errorf("2.5: %v", got)
	}
	for _, bad := range []string{"0", "-1", "x"} {
		t.Setenv(TimeScaleEnv, bad)
		if got := Scaled(time.Second); got != time.Second {
			t.Errorf("%q: %v", bad, got)
		}
	}
}

func TestForkOps(t *testing.T) {
	for _, c := range []struct {
		env  string
		n    int
		want int
	}{{"", 20000, 20000}, {"2000", 20000, 2000}, {"50000", 20000, 20000}, {"0", 100, 100}, {"x", 100, 100}} {
		t.Setenv(ForkOpsEnv, c.env)
		if got := ForkOps(c.n); got != c.want {
			t.Errorf("ForkOps(%d) with %q = %d, want %d", c.n, c.env, got, c.want)
		}
	}
}

// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package grpcreceiver

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The capture shares' settings reach the capture's options (the capture's
// TestShareSettingsLoaded reads them back from the loaded programs).
func TestCaptureOptionsCarryShares(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.MaxCaptureRate = 3 << 20
	cfg.MaxCaptureRatePerUser = 5 << 20
	cfg.CaptureFrameCost = 77
	o := captureOptions(cfg)
	assert.Equal(t, 3<<20, o.Rate)
	assert.Equal(t, 5<<20, o.UserRate)
	assert.Equal(t, 77, o.FrameCost)
}

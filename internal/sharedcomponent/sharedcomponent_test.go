// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package sharedcomponent

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type counting struct {
	starts, stops int
}

func (c *counting) Start(context.Context, component.Host) error { c.starts++; return nil }
func (c *counting) Shutdown(context.Context) error              { c.stops++; return nil }

func TestOneInstancePerConfig(t *testing.T) {
	var m Map[*int, *counting]
	k1, k2 := new(int), new(int)
	created := 0
	create := func() (*counting, error) { created++; return &counting{}, nil }
	a, err := m.LoadOrStore(k1, create)
	require.NoError(t, err)
	b, err := m.LoadOrStore(k1, create)
	require.NoError(t, err)
	c, err := m.LoadOrStore(k2, create)
	require.NoError(t, err)
	assert.Same(t, a, b)
	assert.NotSame(t, a, c)
	assert.Equal(t, 2, created)

	host := componenttest.NewNopHost()
	require.NoError(t, a.Start(context.Background(), host))
	require.NoError(t, b.Start(context.Background(), host))
	assert.Equal(t, 1, a.C.starts)
	require.NoError(t, a.Shutdown(context.Background()))
	require.NoError(t, b.Shutdown(context.Background()))
	assert.Equal(t, 1, a.C.stops)

	// After Shutdown the key is free again: a reload creates a new instance.
	d, err := m.LoadOrStore(k1, create)
	require.NoError(t, err)
	assert.NotSame(t, a, d)
}

func TestCreateErrorIsNotStored(t *testing.T) {
	var m Map[string, *counting]
	_, err := m.LoadOrStore("x", func() (*counting, error) { return nil, errors.New("boom") })
	require.Error(t, err)
	e, err := m.LoadOrStore("x", func() (*counting, error) { return &counting{}, nil })
	require.NoError(t, err)
	assert.NotNil(t, e.C)
}

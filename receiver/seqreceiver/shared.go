// Copyright The otelcol-seq Authors
// SPDX-License-Identifier: Apache-2.0

package seqreceiver

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
)

// The collector creates a receiver once per pipeline type (logs, traces) it
// appears in; one seq receiver must still load its programs and read its ring
// once. shared hands out one instance per configuration, started by the first
// Start and stopped by the first Shutdown (the collector shuts down all
// receivers together), as contrib's sharedcomponent does.
type shared[T component.Component] struct {
	mu sync.Mutex
	m  map[*Config]*sharedEntry[T]
}

type sharedEntry[T component.Component] struct {
	c             T
	start, finish sync.Once
	startErr      error
	shutdownErr   error
	remove        func()
}

func (s *shared[T]) get(cfg *Config, create func() (T, error)) (*sharedEntry[T], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.m[cfg]; ok {
		return e, nil
	}
	c, err := create()
	if err != nil {
		return nil, err
	}
	if s.m == nil {
		s.m = map[*Config]*sharedEntry[T]{}
	}
	e := &sharedEntry[T]{c: c}
	e.remove = func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.m, cfg)
	}
	s.m[cfg] = e
	return e, nil
}

func (e *sharedEntry[T]) Start(ctx context.Context, host component.Host) error {
	e.start.Do(func() { e.startErr = e.c.Start(ctx, host) })
	return e.startErr
}

func (e *sharedEntry[T]) Shutdown(ctx context.Context) error {
	e.finish.Do(func() {
		e.shutdownErr = e.c.Shutdown(ctx)
		e.remove()
	})
	return e.shutdownErr
}
